// The MCP App view, end to end: a real Perennial server, a real MCP client, and the view framed by
// a host built on the SDK's AppBridge in headless Chromium. Checks what the view shows of a real
// result and of the machine, and that its actions change the machine as the API then sees it.
// Needs a build (the view's page) and Chromium (CHROMIUM, default /usr/bin/chromium).
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { McpUiHostContext } from '@modelcontextprotocol/ext-apps';
import { build } from 'esbuild';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { LocalServer } from '../../src/server/local-server.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';

/** What the checks that run in the page use of it. */
interface Browserish {
  getComputedStyle(element: unknown): { backgroundColor: string };
}

const SCREENSHOTS = fileURLToPath(new URL('../../.cache/e2e/screenshots/', import.meta.url));

/** Two figures and output on both streams: the first figure comes inline, the second the view reads. */
const PLOT = `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import sys
print("plotting", len(xs), "points")
print("a warning", file=sys.stderr)
plt.figure(figsize=(4, 2.5)); plt.plot(xs, [v * v for v in xs], marker="o"); plt.title("squares"); plt.show()
plt.figure(figsize=(4, 2.5)); plt.bar(xs, xs); plt.title("bars"); plt.show()
squares = {v: v * v for v in xs}
sum(squares.values())`;

describe('the MCP App view in a host built on the SDK app bridge', { timeout: 300_000 }, () => {
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let server: LocalServer;
  let client: Client;
  let browser: Browser;
  let hostScript: string;
  let viewPage: string;

  before(async () => {
    data = await tempDataDir();
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
    // A client of an MCP Apps host says so; one figure per result inline, the rest as links.
    client = new Client(
      { name: 'perennial-app-host-test', version: '1.0.0' },
      { capabilities: { extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp?inlineImages=1`), {
        requestInit: { headers: { Authorization: `Bearer ${server.token}` } },
      }),
    );
    const { outputFiles } = await build({
      entryPoints: [fileURLToPath(new URL('./mcp-app-host/host-page.ts', import.meta.url))],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      logLevel: 'warning',
    });
    hostScript = outputFiles[0]!.text;
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
    await mkdir(SCREENSHOTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await client?.close();
    await server?.close();
    delete process.env.PERENNIAL_PYTHON;
    await data?.cleanup();
  });

  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;

  /** A page hosting the view for one call of `tool`, whose requests go to the real server. */
  async function host(
    theme: 'light' | 'dark',
    tool: string,
    input: Record<string, unknown>,
    styles?: McpUiHostContext['styles'],
  ): Promise<{ page: Page; view: FrameLocator }> {
    const page = await browser.newPage({ viewport: { width: 760, height: 900 } });
    page.on('pageerror', (error) => console.error('host page:', error));
    const forward = (method: string, params: never): Promise<unknown> => (method === 'tools/call' ? client.callTool(params) : client.readResource(params));
    await page.exposeFunction('mcp', forward);
    await page.setContent('<!doctype html><html><body style="margin:20px"></body></html>');
    await page.addScriptTag({ content: hostScript });
    const { tools } = await client.listTools();
    const definition = tools.find((t) => t.name === tool)!;
    const context: McpUiHostContext = { theme, displayMode: 'inline', toolInfo: { tool: definition }, ...(styles ? { styles } : {}) };
    await page.evaluate(`startView(${JSON.stringify({ html: viewPage, context, input })})`);
    return { page, view: page.frameLocator('iframe') };
  }

  const sendResult = (page: Page, result: CallToolResult) => page.evaluate(`sendResult(${JSON.stringify(result)})`);
  const variableNames = async (replId: string) =>
    ((await call('describe-python-repl', { replId })).structuredContent as { variables: Array<{ name: string }> }).variables.map((v) => v.name).sort();

  it('is linked from the run tools, and served as one self-contained page', async () => {
    const { tools } = await client.listTools();
    for (const name of ['run-python-in-repl', 'run-file-in-repl', 'create-python-repl'])
      assert.equal(getToolUiResourceUri(tools.find((t) => t.name === name)!), 'ui://perennial/machine', name);
    const read = await client.readResource({ uri: 'ui://perennial/machine' });
    const [content] = read.contents;
    assert.equal(content?.mimeType, RESOURCE_MIME_TYPE);
    viewPage = (content as { text: string }).text;
    assert.match(viewPage, /Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/);
    assert.doesNotMatch(viewPage, /<(script|link|img)[^>]+(src|href)=/, 'the page loads nothing from elsewhere');
    assert.deepEqual((content as { _meta?: unknown })._meta, { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } });
  });

  it('shows a real result, its figures, the variables and checkpoints; rolls back and forks', async () => {
    const replId = ((await call('create-python-repl', {})).structuredContent as { replId: string }).replId;
    await call('run-python-in-repl', { replId, pythonCode: 'xs = [1, 2, 3, 4]' });
    await call('checkpoint-python-repl', { replId, label: 'before-plot' });
    const input = { replId, pythonCode: PLOT };
    const result = await call('run-python-in-repl', input);
    assert.equal(result.isError, undefined, JSON.stringify(result.content));

    for (const theme of ['light', 'dark'] as const) {
      const { page, view } = await host(theme, 'run-python-in-repl', input);
      await view.getByText('Running…').waitFor();
      if (theme === 'light') {
        // The server has finished the instruction and the host holds the result, as VS Code does until the person allows it.
        await view.getByText(/^Done in the REPL\. The result has not come through the chat yet/).waitFor();
        assert.equal(await view.locator('table.variables').count(), 0, 'no machine as it was, while the call runs');
      }
      await sendResult(page, result);
      await view.locator('pre.code').getByText('plt.bar(xs, xs)').waitFor();
      // The output in the order it came, the error line marked.
      await view.locator('pre.stream span.stderr').getByText('a warning').waitFor();
      assert.equal(await view.locator('pre.stream').textContent(), 'plotting 4 points\na warning');
      await view.locator('pre.value').getByText('30').waitFor();
      const seq = (result.structuredContent as { seq: number }).seq;
      await view.getByText(`Out[${seq}]`).waitFor();
      // Both figures drawn: the inline one and the one read through the host.
      const images = view.locator('.figures img');
      await eventually(
        async () => (await images.evaluateAll((all) => all.map((image) => (image as unknown as { naturalWidth: number }).naturalWidth))).every((w) => w > 100),
        15_000,
        'both figures drawn',
      );
      assert.equal(await images.count(), 2);
      // The machine: its variables and the checkpoint before this instruction, marked.
      await view.locator('table.variables').getByText('squares', { exact: true }).waitFor();
      await view.locator('table.variables').getByText('xs', { exact: true }).waitFor();
      await view.locator('.node.before-this').getByText('before-plot').waitFor();
      assert.equal(await view.locator('.notice').count(), 0, 'the note on where the figures are is for the model');
      // The frame has grown to the view's size (size-changed) before the picture is taken.
      await eventually(
        async () =>
          (await page.locator('iframe').evaluate((frame) => (frame as unknown as { clientHeight: number }).clientHeight)) >=
          (await view.locator('html').evaluate((html) => (html as unknown as { scrollHeight: number }).scrollHeight)),
        15_000,
        'the frame fits the view',
      );
      await page.locator('iframe').screenshot({ path: `${SCREENSHOTS}mcp-app-${theme}.png` });
      await page.close();
    }

    const { page, view } = await host('light', 'run-python-in-repl', input);
    await sendResult(page, result);
    // A variable expands to its full repr.
    await view.locator('table.variables').getByRole('button', { name: 'squares' }).click();
    await view.locator('pre.detail').getByText('{1: 1, 2: 4, 3: 9, 4: 16}').waitFor();
    // A figure zooms to its full size.
    await view.locator('.figures button').first().click();
    await view.getByRole('dialog').getByText('Figure 1 of In [').waitFor();
    await view.getByRole('dialog').getByRole('button', { name: 'Close' }).click();

    // Roll back asks first; cancelled, nothing changes.
    await view.getByRole('button', { name: 'Roll back…' }).click();
    await view
      .getByRole('alertdialog')
      .getByText(/Roll .* back to "before-plot"/)
      .waitFor();
    await view.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
    assert.deepEqual(await variableNames(replId), ['squares', 'xs']);
    await view.getByRole('button', { name: 'Roll back…' }).click();
    await view.getByRole('alertdialog').getByRole('button', { name: 'Roll back' }).click();
    await view
      .locator('.status.ok')
      .getByText(/Rolled .* back to checkpoint/)
      .waitFor();
    assert.deepEqual(await variableNames(replId), ['xs'], 'the API sees the state before the plot');
    await eventually(async () => !(await view.locator('table.variables').getByText('squares', { exact: true }).count()), 15_000, 'the view shows the rollback');

    // Fork: a new machine with the state as it is now.
    await view.getByRole('button', { name: 'Fork' }).click();
    const status = await view
      .locator('.status.ok')
      .getByText(/^Forked /)
      .textContent();
    const fork = /as (\S+)$/.exec(status!)![1]!;
    assert.deepEqual(await variableNames(fork), ['xs']);
    const list = (await call('list-python-repls', {})).structuredContent as { repls: Array<{ name: string; tags: Record<string, string> }> };
    assert.equal(list.repls.find((m) => m.name === fork)?.tags.forked_from, replId);

    // Re-run asks first, then runs the code again on the state as it is now, and shows the new result.
    await view.getByRole('button', { name: 'Re-run…' }).click();
    await view.getByRole('alertdialog').getByRole('button', { name: 'Run again' }).click();
    const caption = await view
      .locator('.caption')
      .getByText(/^Re-run of In \[\d+\] as In \[\d+\]$/)
      .textContent();
    const rerunSeq = Number(/as In \[(\d+)\]/.exec(caption!)![1]);
    await view.getByText(`Out[${rerunSeq}]`).waitFor();
    assert.deepEqual(await variableNames(replId), ['squares', 'xs']);

    // The model is told what the user did.
    const told = JSON.stringify(await page.evaluate('modelContext'));
    assert.match(told, /rolled .* back to \\"before-plot\\".*then forked .*then ran the code of instruction \d+ again/);
    await page.close();
  });

  it('follows a run whose call answered while its code still ran (a client without tasks) to its result', async () => {
    const soon = new Client({ name: 'perennial-app-host-test', version: '1.0.0' });
    await soon.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp?answerWithin=1`), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } }),
    );
    try {
      const replId = ((await call('create-python-repl', {})).structuredContent as { replId: string }).replId;
      const input = { replId, pythonCode: 'import time\nfor i in range(4):\n    print("step", i, flush=True)\n    time.sleep(1)\n"finished"' };
      const { page, view } = await host('light', 'run-python-in-repl', input);
      const early = (await soon.callTool({ name: 'run-python-in-repl', arguments: input })) as CallToolResult;
      assert.equal((early.structuredContent as { running: boolean }).running, true);
      await sendResult(page, early);
      assert.equal(await view.getByText('Running…').count(), 1, 'still running, not a result');
      await view.locator('pre.value').getByText("'finished'").waitFor();
      await view
        .locator('pre.stream')
        .getByText(/step 3/)
        .waitFor();
      await page.close();
    } finally {
      await soon.close();
    }
  });

  it('shows output as it comes, interrupts the call, and takes the host theme variables', async () => {
    const replId = ((await call('create-python-repl', {})).structuredContent as { replId: string }).replId;
    const input = { replId, pythonCode: 'import time\nfor i in range(600):\n    print("tick", i, flush=True)\n    time.sleep(0.1)', timeoutSeconds: 0 };
    const { page, view } = await host('dark', 'run-python-in-repl', input, { variables: { '--color-background-primary': 'rgb(1, 2, 3)' } as never });
    assert.equal(await view.locator('body').evaluate((body) => (globalThis as unknown as Browserish).getComputedStyle(body).backgroundColor), 'rgb(1, 2, 3)');
    const running = call('run-python-in-repl', input);
    // Its output shows as it comes, before the result.
    await view
      .locator('pre.stream')
      .getByText(/tick 3/)
      .waitFor();
    assert.equal(await view.getByText('Running…').count(), 1);
    await view.getByRole('button', { name: 'Interrupt' }).click();
    await view.locator('.status.ok').getByText(`Interrupted ${replId}`).waitFor();
    const result = await running;
    await sendResult(page, result);
    await view.locator('pre.traceback').getByText('KeyboardInterrupt').waitFor();
    await page.close();
  });
});
