/**
 * Hosted ForeverVM for the suite: a Perennial server of its own behind a proxy that speaks only
 * the ForeverVM protocol, and VS Code set to reach it (address and token). The test's changes undo
 * it all, and wait until Copilot's tools reach the local server again.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { foreverVMOnlyProxy } from '../../helpers/forevervm-only-proxy.ts';
import type { Changes } from './changes.ts';
import { toolsReachLocal } from './tools.ts';
import { eventually } from './workbench.ts';

export const EXTENSION_ID = 'perennial.perennial-repl';

/** The CLI the extension ships, run on VS Code's own Node as the extension runs it. */
export function cliOfTheExtension(): { node: string; cli: string; env: NodeJS.ProcessEnv } {
  const cli = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
  return { node: process.execPath, cli, env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } };
}

export interface HostedStandIn {
  /** The protocol's paths it was asked, in order. */
  requests: string[];
  /** A machine made on the hosted side, as another ForeverVM client would make it. */
  newMachine(body: object): Promise<string>;
}

/**
 * A Perennial server of the test's own, on a data dir of its own, started with the extension's CLI;
 * stopped and removed when the test ends, after which Copilot's tools are waited for on the local
 * server again.
 */
export async function standInServer(changes: Changes, what: string): Promise<{ url: string; token: string }> {
  // Undone last, once the rest is.
  changes.onEnd(toolsReachLocal);
  const dataDir = mkdtempSync(join(tmpdir(), `perennial-${what}-`));
  const { node, cli, env } = cliOfTheExtension();
  const server = spawn(node, [cli, '--data-dir', dataDir, 'serve'], { env, stdio: 'ignore' });
  changes.onEnd(async () => {
    server.kill('SIGTERM');
    await eventually(() => (existsSync(join(dataDir, 'server.json')) ? undefined : true), `the ${what} server to stop`, 20_000);
    rmSync(dataDir, { recursive: true, force: true });
  });
  return eventually(
    () =>
      existsSync(join(dataDir, 'server.json')) ? (JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { url: string; token: string }) : undefined,
    `the ${what} server`,
  );
}

export async function hostedStandIn(changes: Changes): Promise<HostedStandIn> {
  const info = await standInServer(changes, 'hosted');
  const proxy = await foreverVMOnlyProxy(info.url);
  changes.onEnd(async () => proxy.close());
  await changes.setting('perennial.forevervm.baseUrl', proxy.url);
  await vscode.commands.executeCommand('perennial.setForeverVMToken', info.token);
  changes.onEnd(() => Promise.resolve(vscode.commands.executeCommand('perennial.removeForeverVMToken')));
  return {
    requests: proxy.forwarded,
    async newMachine(body) {
      const created = await fetch(`${proxy.url}/v1/machine/new`, {
        method: 'POST',
        headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return ((await created.json()) as { machine_name: string }).machine_name;
    },
  };
}
