import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { defaultDataDir } from '../../../src/platform/data-dir.ts';
import { eventually, screenshot, ui } from './workbench.ts';
import { foreverVMOnlyProxy } from '../../helpers/forevervm-only-proxy.ts';

const EXTENSION_ID = 'perennial.perennial-repl';
const MCP_SERVER_ID = `${EXTENSION_ID}/Perennial Python REPLs`;

/** A tool by its MCP name: VS Code prefixes it with the server's name, in a way that varies by version. */
function tool(name: string): vscode.LanguageModelToolInformation | undefined {
  return vscode.lm.tools.find((candidate) => candidate.name.endsWith(name) || candidate.name.endsWith(name.replaceAll('-', '_')));
}

async function invoke(name: string, input: object): Promise<string> {
  const result = await vscode.lm.invokeTool(tool(name)!.name, { input, toolInvocationToken: undefined });
  return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
}

/** The rows of the Machines view, as shown. */
const TREE_ROWS = '.part.sidebar .monaco-list-row';

suite('Perennial in VS Code', () => {
  let replId = '';

  suiteSetup(async () => {
    // The smoke-test driver leaves modal dialogs unanswered: no confirmation before a delete.
    await vscode.workspace.getConfiguration('perennial').update('confirmDelete', false, vscode.ConfigurationTarget.Global);
    await vscode.workspace.getConfiguration('perennial').update('confirmRollback', false, vscode.ConfigurationTarget.Global);
  });

  test('activates', async () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(extension, 'the extension is installed');
    await extension.activate();
    assert.ok(extension.isActive);
    assert.ok((await vscode.commands.getCommands(true)).includes('perennial.setForeverVMToken'));
  });

  test("the MCP server starts through VS Code's own client, and its tools appear", async () => {
    // VS Code asks providers for their servers lazily: until it has, starting by id does nothing.
    await eventually(
      async () => {
        await vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true, autoTrustChanges: true });
        return tool('create-python-repl');
      },
      `the tools of ${MCP_SERVER_ID} (tools now: ${vscode.lm.tools.map((t) => t.name).join(', ')})`,
    );
    for (const name of ['run-python-in-repl', 'list-repl-variables', 'delete-python-repl']) assert.ok(tool(name), `the tool ${name}`);
  });

  test('Copilot-style tool calls: create a REPL, then run in it twice, and state persists', async () => {
    // VS Code hands a tool's structured content to the model, as JSON text.
    replId = (JSON.parse(await invoke('create-python-repl', {})) as { replId: string }).replId;
    assert.match(replId, /^[\w-]{16}$/);
    const first = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x = 20 + 1' })) as { value: string | null; error: string | null };
    assert.deepEqual([first.value, first.error], [null, null]);
    const second = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x * 2' })) as { value: string | null };
    assert.equal(second.value, '42');
  });

  test('the Machines view shows that machine, and its variables when expanded', async () => {
    await vscode.commands.executeCommand('workbench.view.extension.perennial');
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? true : undefined), `${replId} in the Machines view`);
    await ui({ click: `${TREE_ROWS}:has-text("${replId}")` });
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes('x: int = 21')) ? true : undefined),
      'the variable x in the Machines view',
    );
    await screenshot('machines-tree');
  });

  test('Run Selection or Line sends code to the active machine; the output panel shows the value', async () => {
    await vscode.commands.executeCommand('perennial.selectMachine', replId);
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'demo.py');
    writeFileSync(file, 'y = x * 2\nprint("doubled", y)\ny + 0.5\n');
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(0, 0, 1, 99);
    await vscode.commands.executeCommand('perennial.runSelection');
    editor.selection = new vscode.Selection(2, 0, 2, 0);
    await vscode.commands.executeCommand('perennial.runSelection');
    const shown = await eventually(async () => {
      const text = (await ui({ text: 'main#entries' })).join('\n');
      return text.includes('42.5') ? text : undefined;
    }, 'the value 42.5 in the output panel');
    assert.match(shown, /doubled 42/);
    assert.equal(editor.selection.active.line, 3, 'after running a line, the cursor moves to the next');
  });

  test('the output panel shows what a swap did not keep', async () => {
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'lost.py');
    writeFileSync(file, 'handle = open("notes.txt", "w")\ny * 10\n');
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(0, 0, 0, 0);
    await vscode.commands.executeCommand('perennial.runSelection');
    // Swapped out with the CLI the extension ships, as an idle machine would be.
    const cli = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
    execFileSync(process.execPath, [cli, 'machine', 'swap', replId], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' } });
    await vscode.commands.executeCommand('perennial.runSelection');
    const shown = await eventually(async () => {
      const text = (await ui({ text: 'main#entries section:last-child' })).join('\n');
      return text.includes('Not kept across the swap') ? text : undefined;
    }, 'the loss in the output panel');
    assert.match(shown, /420/, 'the value of the run');
    assert.match(shown, /Not kept across the swap: handle \(open file 'notes.txt'/);
    await screenshot('output-panel-lost');
  });

  test('Interrupt stops what the machine runs', async () => {
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'slow.py');
    writeFileSync(file, 'import time\ntime.sleep(60)\n');
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(0, 0, 1, 99);
    const running = vscode.commands.executeCommand('perennial.runSelection');
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId) && row.includes('busy')) ? true : undefined),
      `${replId} to be busy`,
    );
    await vscode.commands.executeCommand('perennial.interrupt', { source: 'local', name: replId });
    await running;
    const shown = await eventually(async () => {
      const text = (await ui({ text: 'main#entries' })).join('\n');
      return text.includes('KeyboardInterrupt') ? text : undefined;
    }, 'KeyboardInterrupt in the output panel');
    assert.doesNotMatch(shown, /did not stop within/, 'the code stopped at the interrupt, without a hard stop');
  });

  test('Take Checkpoint, Roll Back and Fork Machine: checkpoints in the view, the rollback marked in the output panel', async () => {
    const machine = { source: 'local', name: replId };
    const checkpoint = (await vscode.commands.executeCommand('perennial.takeCheckpoint', machine, 'e2e-before')) as { id: string };
    assert.match(checkpoint.id, /^\d+$/);
    JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x = 99' }));
    await ui({ click: `${TREE_ROWS}:has-text("Checkpoints")` });
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(`${checkpoint.id} · e2e-before`)) ? true : undefined),
      'the checkpoint in the Machines view',
    );
    await screenshot('machines-tree-checkpoints');
    await vscode.commands.executeCommand('perennial.rollback', machine, checkpoint.id);
    const marked = await eventually(async () => {
      const text = (await ui({ text: 'main#entries section:last-child' })).join('\n');
      return text.includes('Rolled back to checkpoint') ? text : undefined;
    }, 'the rollback in the output panel');
    assert.match(marked, new RegExp(`# perennial: rollback to checkpoint ${checkpoint.id} \\("e2e-before"\\)`));
    assert.equal((JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x' })) as { value: string }).value, '21');
    const fork = (await vscode.commands.executeCommand('perennial.forkMachine', machine)) as { name: string };
    assert.notEqual(fork.name, replId);
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(fork.name) && row.includes(`forked_from=${replId}`)) ? true : undefined),
      'the fork in the Machines view',
    );
    assert.equal((JSON.parse(await invoke('run-python-in-repl', { replId: fork.name, pythonCode: 'x' })) as { value: string }).value, '21');
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: fork.name });
  });

  test('a figure from a python-engine machine shows inline in the output panel', async () => {
    const { replId: plotting } = JSON.parse(await invoke('create-python-repl', { engine: 'python' })) as { replId: string };
    await vscode.commands.executeCommand('perennial.selectMachine', plotting);
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'plot.py');
    writeFileSync(
      file,
      [
        '# %%',
        'import matplotlib.pyplot as plt',
        'xs = list(range(50))',
        'plt.plot(xs, [x * x for x in xs])',
        "plt.title('squares')",
        'plt.show()',
        '# %%',
        'import pandas as pd',
        'pd.DataFrame({"fjord": ["Sognefjord", "Hardangerfjord"]})',
        '',
      ].join('\n'),
    );
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(2, 0, 2, 0);
    await vscode.commands.executeCommand('perennial.runCell');
    await eventually(async () => ((await ui({ text: 'main#entries img' })).length ? true : undefined), 'a figure in the output panel', 120_000);
    await screenshot('output-panel-plot');
    // A DataFrame's HTML table, in a sandboxed frame of the panel.
    editor.selection = new vscode.Selection(7, 0, 7, 0);
    await vscode.commands.executeCommand('perennial.runCell');
    await eventually(async () => ((await ui({ text: 'td' })).includes('Hardangerfjord') ? true : undefined), 'the table in the output panel');
    assert.equal((await ui({ text: 'main#entries iframe[sandbox=""]' })).length, 1, 'in a frame whose sandbox allows nothing');
    await screenshot('output-panel-html');
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: plotting });
  });

  test('what the model receives from a run with figures: the structured content as JSON, and the figures as images', async () => {
    const { replId: plotting } = JSON.parse(await invoke('create-python-repl', { engine: 'python' })) as { replId: string };
    const pythonCode = 'import matplotlib.pyplot as plt\nfor k in range(2):\n    plt.figure()\n    plt.plot([k, 1])\nprint("drawn")';
    const result = await vscode.lm.invokeTool(tool('run-python-in-repl')!.name, { input: { replId: plotting, pythonCode }, toolInvocationToken: undefined });
    const texts = result.content.filter((part) => part instanceof vscode.LanguageModelTextPart).map((part) => part.value);
    // LanguageModelDataPart is newer than the API types this extension builds against.
    const images = result.content.filter((part) => !(part instanceof vscode.LanguageModelTextPart)) as unknown as Array<{ mimeType: string; data: Uint8Array }>;
    console.log(
      `the model receives: ${JSON.stringify([...images.map((p) => ({ mimeType: p.mimeType, bytes: p.data.length })), ...texts.map((text) => ({ text }))])}`,
    );
    assert.equal(texts.length, 1, 'one text part: the structured content, without the text content');
    const structured = JSON.parse(texts[0]!) as Record<string, unknown>;
    const uris = [1, 2].map((n) => `perennial://machines/${plotting}/figures/0/${n}.png`);
    assert.deepEqual(structured, {
      stdout: 'drawn',
      stderr: '',
      value: null,
      error: null,
      displayed: [],
      notes: [`2 figures: 1 shown inline, at most 1 per result; read the rest as resources: ${uris[1]}`],
      lost: [],
      figures: [
        { uri: uris[0], inline: true },
        { uri: uris[1], inline: false },
      ],
      runtimeMs: structured.runtimeMs,
      seq: 0,
    });
    // The inline figure, and the linked one, which VS Code reads for the model; the inline one's link is for the user only.
    assert.deepEqual(
      images.map((p) => p.mimeType),
      ['image/png', 'image/png'],
    );
    assert.ok(images.every((p) => Buffer.from(p.data).subarray(1, 4).toString() === 'PNG'));
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: plotting });
  });

  test('Delete removes the machine, from the server and from the view (and it stops being the active one)', async () => {
    await vscode.commands.executeCommand('perennial.selectMachine', replId);
    await eventually(
      async () => ((await ui({ text: '.statusbar-item' })).some((item) => item.includes(replId)) ? true : undefined),
      `${replId} in the status bar`,
    );
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: replId });
    const listed = JSON.parse(await invoke('list-python-repls', {})) as { repls: Array<{ replId: string }> } | Array<{ replId: string }>;
    assert.ok(!JSON.stringify(listed).includes(replId), `${replId} is gone from ${JSON.stringify(listed)}`);
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? undefined : true),
      `${replId} to leave the Machines view`,
    );
    await eventually(
      async () => ((await ui({ text: '.statusbar-item' })).some((item) => item.includes(replId)) ? undefined : true),
      'the deleted machine to stop being the active one',
    );
  });

  test('with a ForeverVM token, the view gets a ForeverVM root, and code runs in hosted machines', async () => {
    // Hosted ForeverVM, played by a Perennial server behind a proxy that only speaks the protocol.
    const dataDir = mkdtempSync(join(tmpdir(), 'perennial-hosted-'));
    const cli = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'dist', 'cli.js');
    const hosted = spawn(process.execPath, [cli, '--data-dir', dataDir, 'serve'], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: 'ignore' });
    try {
      const info = await eventually(
        () =>
          existsSync(join(dataDir, 'server.json'))
            ? (JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { url: string; token: string })
            : undefined,
        'the stand-in server',
      );
      const proxy = await foreverVMOnlyProxy(info.url);
      try {
        await vscode.workspace.getConfiguration('perennial').update('forevervm.baseUrl', proxy.url, vscode.ConfigurationTarget.Global);
        await vscode.commands.executeCommand('perennial.setForeverVMToken', info.token);
        const created = await fetch(`${proxy.url}/v1/machine/new`, {
          method: 'POST',
          headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ engine: 'python', tags: { where: 'hosted' } }),
        });
        const { machine_name: name } = (await created.json()) as { machine_name: string };
        await vscode.commands.executeCommand('perennial.refresh');
        await eventually(async () => {
          const rows = await ui({ text: TREE_ROWS });
          return rows.some((row) => row.includes('ForeverVM')) && rows.some((row) => row.includes(name) && row.includes('where=hosted')) ? true : undefined;
        }, `the ForeverVM root with ${name}`);

        await vscode.commands.executeCommand('perennial.selectMachine', { source: 'forevervm', name });
        const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'hosted.py');
        writeFileSync(file, 'w = 6 * 7\nw\n');
        const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
        editor.selection = new vscode.Selection(0, 0, 1, 99);
        await vscode.commands.executeCommand('perennial.runSelection');
        // The panel's last entry is this run: the machine's name, then the value alone on its line.
        await eventually(
          async () => (/\n42$/.test((await ui({ text: 'main#entries section:last-child' })).join('\n').trim()) ? true : undefined),
          'the hosted value in the output panel',
        );
        // Variables of a hosted machine come from an instruction that lists them.
        await ui({ click: `${TREE_ROWS}:has-text("${name}")` });
        await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes('w: int = 42')) ? true : undefined), 'the hosted variable w');

        // With the forevervm backend, the MCP server is `perennial mcp --backend forevervm` over stdio.
        await vscode.workspace.getConfiguration('perennial').update('backend', 'forevervm', vscode.ConfigurationTarget.Global);
        // VS Code replaces the running server when the definition changes; calls meanwhile are cancelled.
        const hostedTools = await eventually(async () => {
          try {
            await vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true, autoTrustChanges: true });
            const listed = JSON.parse(await invoke('list-python-repls', {})) as { repls: Array<{ name: string }> };
            return listed.repls.some((repl) => repl.name === name) ? listed : undefined;
          } catch (error) {
            if ((error as Error).name === 'Canceled') return undefined;
            throw error;
          }
        }, 'the MCP tools to list the hosted machines');
        assert.ok(hostedTools.repls.length >= 1);
        const run = await eventually(async () => {
          try {
            return JSON.parse(await invoke('run-python-in-repl', { replId: name, pythonCode: 'w + 1' })) as { value: string };
          } catch (error) {
            if ((error as Error).name === 'Canceled') return undefined;
            throw error;
          }
        }, 'a run through the hosted MCP server');
        assert.equal(run.value, '43');
      } finally {
        await vscode.workspace.getConfiguration('perennial').update('backend', undefined, vscode.ConfigurationTarget.Global);
        await vscode.workspace.getConfiguration('perennial').update('forevervm.baseUrl', undefined, vscode.ConfigurationTarget.Global);
        proxy.close();
      }
    } finally {
      hosted.kill('SIGTERM');
      await eventually(() => (existsSync(join(dataDir, 'server.json')) ? undefined : true), 'the stand-in server to stop', 20_000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('perennial.defaultEngine reaches the local server VS Code starts', async () => {
    // Stopped as an idle server stops; the next use starts another, with the settings of then.
    const dataDir = defaultDataDir();
    const serverInfo = () =>
      existsSync(join(dataDir, 'server.json'))
        ? (JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { pid: number; url: string; token: string })
        : undefined;
    process.kill(serverInfo()!.pid, 'SIGTERM');
    await eventually(() => (serverInfo() ? undefined : true), 'the local server to stop');
    await vscode.workspace.getConfiguration('perennial').update('defaultEngine', 'python', vscode.ConfigurationTarget.Global);
    try {
      await vscode.commands.executeCommand('perennial.refresh');
      const server = await eventually(serverInfo, 'a local server started by VS Code');
      const headers = { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' };
      // As Copilot's create-python-repl and ForeverVM clients create machines: without an engine.
      const { machine_name: name } = (await (await fetch(`${server.url}/v1/machine/new`, { method: 'POST', headers, body: '{}' })).json()) as {
        machine_name: string;
      };
      const details = (await (await fetch(`${server.url}/v1/machine/${name}`, { headers })).json()) as { engine: string };
      assert.equal(details.engine, 'python');
    } finally {
      await vscode.workspace.getConfiguration('perennial').update('defaultEngine', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
