import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { viewResult } from '../shared/result-format.ts';
import type { ExecResult, OutputChunk } from '../shared/types.ts';

export interface Terminal {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

export const processTerminal: Terminal = { out: process.stdout, err: process.stderr };

/** Prints a streamed output line the way the code wrote it: stdout to stdout, stderr to stderr. */
export function printChunk(term: Terminal, chunk: OutputChunk): void {
  (chunk.stream === 'stderr' ? term.err : term.out).write(chunk.data + '\n');
}

/** Where a command saves a machine's figures when not told: a folder of its own in the system's temporary folder. */
export function figuresDir(machine: string, given?: string): string {
  return given ?? join(tmpdir(), 'perennial-figures', machine);
}

/**
 * Prints what follows the output: what the code displayed, as text (its output streamed before
 * it), the value (stdout) or the traceback (stderr), then notes about figures, lost variables
 * and restores (stderr). Figures are saved in `imagesDir`, and where is said.
 */
export async function printResult(term: Terminal, result: ExecResult, seq: number, imagesDir: string): Promise<void> {
  const { value, error, notes, images, displayed } = viewResult(result, 'give it longer with --timeout SECONDS (0: no limit)');
  for (const { text } of displayed) term.out.write(text + '\n');
  if (error !== null) term.err.write(error + '\n');
  else if (value !== null) term.out.write(value + '\n');
  for (const note of notes) term.err.write(`perennial: ${note.text}\n`);
  if (!images.length) return;
  await mkdir(imagesDir, { recursive: true });
  for (const [i, image] of images.entries()) {
    const path = join(imagesDir, `figure-${seq}-${i + 1}.png`);
    await writeFile(path, Buffer.from(image.data, 'base64'));
    term.err.write(`perennial: figure saved to ${path}\n`);
  }
}
