import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, request, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalServer } from '../../src/server/local-server.ts';
import { TEST_PYTHON, tempDataDir } from '../helpers/machines.ts';
import { testClusterOf } from '../helpers/test-cluster.ts';
import { node22Tool } from '../helpers/node22-tools.ts';

const SUITE_VERSION = '0.2.0-alpha.12';

/**
 * Every scenario that needs no test-only fixture (tools named test_*, test:// resources...), with
 * each protocol version the suite runs it at (`conformance list --server`).
 */
const SCENARIOS: Record<string, string[]> = {
  'server-initialize': ['2025-06-18', '2025-11-25'],
  'server-session-lifecycle': ['2025-03-26', '2025-06-18', '2025-11-25'],
  'server-stateless': ['2026-07-28'],
  'logging-set-level': ['2025-06-18', '2025-11-25'],
  ping: ['2025-06-18', '2025-11-25'],
  'tools-list': ['2025-06-18', '2025-11-25', '2026-07-28'],
  'server-sse-multiple-streams': ['2025-11-25', '2026-07-28'],
  'sep-2164-resource-not-found': ['2026-07-28'],
  'dns-rebinding-protection': ['2025-11-25', '2026-07-28'],
  'http-header-validation': ['2026-07-28'],
  'input-required-result-missing-input-response': ['2026-07-28'],
  'input-required-result-unsupported-methods': ['2026-07-28'],
  'input-required-result-ignore-extra-params': ['2026-07-28'],
  'input-required-result-validate-input': ['2026-07-28'],
  caching: ['2026-07-28'],
  'resources-list': ['2025-06-18', '2025-11-25', '2026-07-28'],
  'prompts-list': ['2025-06-18', '2025-11-25', '2026-07-28'],
};

/** The only failures allowed: checks the suite can make only with its own diagnostic tools. */
const NEEDS_FIXTURE = /^Not testable: server does not list the diagnostic tool/;

interface Check {
  name: string;
  status: string;
  errorMessage?: string;
}

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
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })),
  );
}

describe('MCP conformance suite (@modelcontextprotocol/conformance) against /mcp', { timeout: 300_000 }, () => {
  let server: LocalServer;
  let proxy: { server: Server; url: string };
  let cleanup: () => Promise<void>;
  let node22: string;
  let suite: string;

  before(async () => {
    // The suite needs Node 22 (fs.globSync).
    const tool = node22Tool('conformance', '@modelcontextprotocol/conformance', SUITE_VERSION);
    node22 = tool.node;
    suite = join(tool.packageDir, 'dist/index.js');
    const data = await tempDataDir();
    cleanup = data.cleanup;
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python', ...(await testClusterOf(data.dir)) });
    proxy = await tokenProxy(new URL(server.url), server.token);
  });
  after(async () => {
    proxy.server.close();
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await cleanup();
  });

  for (const [scenario, versions] of Object.entries(SCENARIOS)) {
    for (const version of versions) {
      it(`${scenario} at ${version}`, async () => {
        const out = await mkdtemp(join(tmpdir(), 'perennial-conformance-'));
        try {
          const child = spawn(node22, [suite, 'server', '--url', `${proxy.url}/mcp`, '--scenario', scenario, '--spec-version', version, '-o', out], {
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let output = '';
          child.stdout.on('data', (d: Buffer) => (output += d));
          child.stderr.on('data', (d: Buffer) => (output += d));
          await new Promise((resolve) => child.once('close', resolve));
          const [run] = await readdir(out);
          assert.ok(run, `no results: ${output}`);
          const checks = JSON.parse(await readFile(join(out, run, 'checks.json'), 'utf8')) as Check[];
          assert.ok(
            checks.some((c) => c.status === 'SUCCESS'),
            `nothing passed: ${output}`,
          );
          const failed = checks.filter((c) => c.status === 'FAILURE' && !NEEDS_FIXTURE.test(c.errorMessage ?? ''));
          assert.deepEqual(
            failed.map((c) => `${c.name}: ${c.errorMessage}`),
            [],
          );
        } finally {
          await rm(out, { recursive: true, force: true });
        }
      });
    }
  }
});
