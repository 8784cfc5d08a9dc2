/**
 * What tests do to the workbench: wait for VS Code's asynchronous state, and act on the page
 * through the runner (run-vscode.mjs), which sees what the extension host cannot.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Polls `probe` until it returns something, for state that VS Code updates asynchronously. */
export async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * In desktop VS Code (run-desktop.mjs) no runner sees the page: a test that needs it is skipped
 * (index.ts), saying so.
 */
export class NeedsPageError extends Error {
  constructor(what: string) {
    super(`needs the workbench's page (${what}), which only the code-server run (npm run test:e2e) reaches`);
  }
}

const desktop = process.env.PERENNIAL_E2E_DESKTOP === '1';

/** The rows of the Machines view, as shown. */
export const TREE_ROWS = '.part.sidebar .monaco-list-row';

let actions = 0;

/**
 * Acts on the workbench page through the runner (see run-vscode.mjs): clicks, or fires a click
 * event on the last match in any frame (`dispatch`), or types; then reads the text of what matches.
 */
export async function ui(action: {
  click?: string;
  dispatch?: string;
  type?: { into: string; text: string };
  press?: { on: string; key: string };
  text?: string;
}): Promise<string[]> {
  return (await page(action)).text;
}

/** How many elements of the page (in any frame) match `selector`. */
export async function count(selector: string): Promise<number> {
  return (await page({ count: selector })).count;
}

async function page(action: {
  click?: string;
  dispatch?: string;
  type?: { into: string; text: string };
  press?: { on: string; key: string };
  text?: string;
  count?: string;
}): Promise<{ text: string[]; count: number }> {
  if (desktop) throw new NeedsPageError(JSON.stringify(action));
  const id = `action-${++actions}`;
  console.log(`@@ui:${id}:${JSON.stringify(action)}`);
  const file = join(process.env.PERENNIAL_E2E_UI!, `${id}.json`);
  const answer = await eventually(
    () => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { ok: boolean; text: string[]; count: number; error?: string }) : undefined),
    `the page to answer ${id}`,
  );
  if (!answer.ok) throw new Error(`the page could not ${JSON.stringify(action)}: ${answer.error}`);
  return answer;
}

export async function screenshot(name: string): Promise<void> {
  if (desktop) return;
  const file = join(process.env.PERENNIAL_E2E_SHOTS!, `${name}.png`);
  rmSync(file, { force: true });
  console.log(`@@screenshot:${name}`);
  await eventually(() => existsSync(file) || undefined, `the screenshot ${name}`);
}
