import { InvalidArgumentError } from 'commander';
import { parseInlineImages } from '../shared/requests.ts';

/** Commander collector for repeated `--tag k=v`. */
export function collectTag(value: string, tags: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected key=value, got "${value}"`);
  return { ...tags, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`expected a positive number, got "${value}"`);
  return n;
}

/** `--timeout`: seconds, 0 for no limit. */
export function timeoutSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`expected a number of seconds, or 0 for no limit, got "${value}"`);
  return n;
}

export function positiveInteger(value: string): number {
  const n = positiveNumber(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return n;
}

/** `--task-after`: seconds, 0 for at once. */
export function taskAfterSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`expected a number of seconds, or 0 for at once, got "${value}"`);
  return n;
}

/** `--answer-within`: seconds, 0 for a call that waits for the end. */
export function answerWithinSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`expected a number of seconds, or 0 for an answer at the end, got "${value}"`);
  return n;
}

/** A TCP port; 0 means any free one. */
export function portNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`expected a port from 0 (any free port) to 65535, got "${value}"`);
  return n;
}

/** `--inline-images`: how many figures an MCP result shows as images. */
export function inlineImageCount(value: string): number {
  try {
    return parseInlineImages(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
