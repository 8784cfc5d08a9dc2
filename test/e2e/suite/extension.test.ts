import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { defaultDataDir } from '../../../src/platform/data-dir.ts';
import { suiteChanges, testChanges } from './changes.ts';
import { cliOfTheExtension, EXTENSION_ID } from './hosted.ts';
import { invoke, invokeJson, MCP_SERVER_ID, newRepl, tool, toolsReachLocal } from './tools.ts';
import { eventually, screenshot, TREE_ROWS, ui } from './workbench.ts';

/** Shows the Machines view, which a test that reads it cannot expect another to have opened. */
async function machinesView(): Promise<void> {
  await vscode.commands.executeCommand('workbench.view.extension.perennial');
}

/** Types code into a file of the workspace and runs lines [from, to] of it as Run Selection or Line does. */
async function runLines(name: string, code: string, from: number, to = from): Promise<vscode.TextEditor> {
  const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, name);
  writeFileSync(file, code);
  const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
  editor.selection = from === to ? new vscode.Selection(from, 0, from, 0) : new vscode.Selection(from, 0, to, 99);
  await vscode.commands.executeCommand('perennial.runSelection');
  return editor;
}

/** The last entry of the output panel once it includes `part`. */
function lastOutputWith(part: string, what: string): Promise<string> {
  return eventually(async () => {
    const text = (await ui({ text: 'main#entries section:last-child' })).join('\n');
    return text.includes(part) ? text : undefined;
  }, what);
}

suite('Perennial in VS Code', () => {
  const suiteWide = suiteChanges();
  const changes = testChanges();

  suiteSetup(async () => {
    // The smoke-test driver leaves modal dialogs unanswered: no confirmation before a delete.
    await suiteWide.setting('perennial.confirmDelete', false);
    await suiteWide.setting('perennial.confirmRollback', false);
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
    const replId = (JSON.parse(await invoke('create-python-repl', {})) as { replId: string }).replId;
    changes.onEnd(() => invoke('delete-python-repl', { replId }));
    assert.match(replId, /^[a-z]+-[a-z]+(-\d+)?$/);
    const first = await invokeJson<{ value: string | null; error: string | null }>('run-python-in-repl', { replId, pythonCode: 'x = 20 + 1' });
    assert.deepEqual([first.value, first.error], [null, null]);
    const second = await invokeJson<{ value: string | null }>('run-python-in-repl', { replId, pythonCode: 'x * 2' });
    assert.equal(second.value, '42');
  });

  test('the Machines view shows a machine, and its variables when expanded', async () => {
    const replId = await newRepl(changes, 'x = 21');
    await machinesView();
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? true : undefined), `${replId} in the Machines view`);
    await ui({ click: `${TREE_ROWS}:has-text("${replId}")` });
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes('x: int = 21')) ? true : undefined),
      'the variable x in the Machines view',
    );
    await screenshot('machines-tree');
  });

  test('Run Selection or Line sends code to the active machine; the output panel shows the value', async () => {
    await vscode.commands.executeCommand('perennial.selectMachine', await newRepl(changes, 'x = 21'));
    const editor = await runLines('demo.py', 'y = x * 2\nprint("doubled", y)\ny + 0.5\n', 0, 1);
    editor.selection = new vscode.Selection(2, 0, 2, 0);
    await vscode.commands.executeCommand('perennial.runSelection');
    const shown = await lastOutputWith('42.5', 'the value 42.5 in the output panel');
    assert.match((await ui({ text: 'main#entries' })).join('\n'), /doubled 42/);
    assert.match(shown, /42\.5/);
    assert.equal(editor.selection.active.line, 3, 'after running a line, the cursor moves to the next');
  });

  test('the output panel shows what a swap did not keep', async () => {
    const replId = await newRepl(changes, 'y = 42');
    await vscode.commands.executeCommand('perennial.selectMachine', replId);
    const editor = await runLines('lost.py', 'handle = open("notes.txt", "w")\ny * 10\n', 0);
    // Swapped out with the CLI the extension ships, as an idle machine would be.
    const { node, cli, env } = cliOfTheExtension();
    execFileSync(node, [cli, 'machine', 'swap', replId], { env });
    assert.equal(editor.selection.active.line, 1);
    await vscode.commands.executeCommand('perennial.runSelection');
    const shown = await lastOutputWith('Not kept across the swap', 'the loss in the output panel');
    assert.match(shown, /420/, 'the value of the run');
    assert.match(shown, /Not kept across the swap: handle \(open file 'notes.txt'/);
    await screenshot('output-panel-lost');
  });

  test('Interrupt stops what the machine runs', async () => {
    const replId = await newRepl(changes);
    await vscode.commands.executeCommand('perennial.selectMachine', replId);
    await machinesView();
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
    const shown = await lastOutputWith('KeyboardInterrupt', 'KeyboardInterrupt in the output panel');
    assert.doesNotMatch(shown, /did not stop within/, 'the code stopped at the interrupt, without a hard stop');
  });

  test('Take Checkpoint, Roll Back and Fork Machine: checkpoints in the view, the rollback marked in the output panel', async () => {
    const replId = await newRepl(changes, 'x = 21');
    const machine = { source: 'local', name: replId };
    await machinesView();
    const checkpoint = (await vscode.commands.executeCommand('perennial.takeCheckpoint', machine, 'e2e-before')) as { id: string };
    assert.match(checkpoint.id, /^\d+$/);
    await invokeJson('run-python-in-repl', { replId, pythonCode: 'x = 99' });
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? true : undefined), `${replId} in the Machines view`);
    await ui({ click: `${TREE_ROWS}:has-text("${replId}")` });
    await ui({ click: `${TREE_ROWS}:has-text("Checkpoints")` });
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(`${checkpoint.id} · e2e-before`)) ? true : undefined),
      'the checkpoint in the Machines view',
    );
    await screenshot('machines-tree-checkpoints');
    await vscode.commands.executeCommand('perennial.rollback', machine, checkpoint.id);
    const marked = await lastOutputWith('Rolled back to checkpoint', 'the rollback in the output panel');
    assert.match(marked, new RegExp(`# perennial: rollback to checkpoint ${checkpoint.id} \\("e2e-before"\\)`));
    assert.equal((await invokeJson<{ value: string }>('run-python-in-repl', { replId, pythonCode: 'x' })).value, '21');
    const fork = (await vscode.commands.executeCommand('perennial.forkMachine', machine)) as { name: string };
    assert.notEqual(fork.name, replId);
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(fork.name) && row.includes(`forked_from=${replId}`)) ? true : undefined),
      'the fork in the Machines view',
    );
    assert.equal((await invokeJson<{ value: string }>('run-python-in-repl', { replId: fork.name, pythonCode: 'x' })).value, '21');
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: fork.name });
  });

  test('a figure from a python-engine machine shows inline in the output panel', async () => {
    const plotting = await newRepl(changes, undefined, 'python');
    await vscode.commands.executeCommand('perennial.selectMachine', plotting);
    const code = [
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
    ].join('\n');
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'plot.py');
    writeFileSync(file, code);
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(2, 0, 2, 0);
    await vscode.commands.executeCommand('perennial.runCell');
    await eventually(async () => ((await ui({ text: 'main#entries img' })).length ? true : undefined), 'a figure in the output panel', 120_000);
    await screenshot('output-panel-plot');
    // A DataFrame's HTML table, in a sandboxed frame of the panel.
    editor.selection = new vscode.Selection(7, 0, 7, 0);
    await vscode.commands.executeCommand('perennial.runCell');
    await eventually(async () => ((await ui({ text: 'td' })).includes('Hardangerfjord') ? true : undefined), 'the table in the output panel');
    assert.ok((await ui({ text: 'main#entries iframe[sandbox=""]' })).length >= 1, 'in a frame whose sandbox allows nothing');
    await screenshot('output-panel-html');
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: plotting });
  });

  test('what the model receives from a run with figures: the structured content as JSON, and the figures as images', async () => {
    const plotting = await newRepl(changes, undefined, 'python');
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
      running: false,
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
    const replId = await newRepl(changes);
    await machinesView();
    await vscode.commands.executeCommand('perennial.selectMachine', replId);
    await eventually(
      async () => ((await ui({ text: '.statusbar-item' })).some((item) => item.includes(replId)) ? true : undefined),
      `${replId} in the status bar`,
    );
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? true : undefined), `${replId} in the Machines view`);
    await vscode.commands.executeCommand('perennial.deleteMachine', { source: 'local', name: replId });
    const listed = await invokeJson<{ repls: Array<{ replId: string }> }>('list-python-repls', {});
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

  test('perennial.defaultEngine reaches the local server VS Code starts', async () => {
    // Stopped as an idle server stops; the next use starts another, with the settings of then.
    const dataDir = defaultDataDir();
    const serverInfo = () =>
      existsSync(join(dataDir, 'server.json'))
        ? (JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { pid: number; url: string; token: string })
        : undefined;
    // Not a synchronous call: the extension host is the server's parent, and must be free to reap it.
    const { node, cli, env } = cliOfTheExtension();
    const stop = () => promisify(execFile)(node, [cli, 'stop'], { env });
    // Undone after the setting: the next test's server has the default engine again.
    changes.onEnd(async () => {
      await stop();
      await toolsReachLocal();
    });
    // Set first: whatever starts the next server (the Machines view, Copilot) starts it with it.
    await changes.setting('perennial.defaultEngine', 'python');
    const stopped = serverInfo()?.pid;
    await stop();
    await vscode.commands.executeCommand('perennial.refresh');
    const server = await eventually(() => {
      const info = serverInfo();
      return info && info.pid !== stopped ? info : undefined;
    }, 'a local server started by VS Code');
    const headers = { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' };
    // As Copilot's create-python-repl and ForeverVM clients create machines: without an engine.
    const { machine_name: name } = (await (await fetch(`${server.url}/v1/machine/new`, { method: 'POST', headers, body: '{}' })).json()) as {
      machine_name: string;
    };
    const details = (await (await fetch(`${server.url}/v1/machine/${name}`, { headers })).json()) as { engine: string };
    await fetch(`${server.url}/v1/machine/${name}`, { method: 'DELETE', headers });
    assert.equal(details.engine, 'python');
  });

  test("Install Packages puts a package into the machine's own environment, and into nothing else", async () => {
    // pip offline, finding a wheel made here: the server started next has this environment.
    const wheels = mkdtempSync(join(tmpdir(), 'perennial-wheels-'));
    const makeWheel = join(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath, 'test', 'fixtures', 'make_wheel.py');
    execFileSync('/usr/bin/python3', [makeWheel, wheels, 'e2epkg', '1.0', JSON.stringify({ 'e2epkg/__init__.py': 'VALUE = 11\n' })]);
    const { node, cli, env } = cliOfTheExtension();
    const stop = () => promisify(execFile)(node, [cli, 'stop'], { env });
    changes.onEnd(async () => {
      delete process.env.PIP_NO_INDEX;
      delete process.env.PIP_FIND_LINKS;
      rmSync(wheels, { recursive: true, force: true });
      await stop();
      await toolsReachLocal();
    });
    Object.assign(process.env, { PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheels });
    await stop();
    await toolsReachLocal();
    const replId = await newRepl(changes, undefined, 'python');
    const installed = await vscode.commands.executeCommand<string>('perennial.installPackages', { source: 'local', name: replId }, ['e2epkg']);
    assert.equal(installed, 'Successfully installed e2epkg-1.0');
    const ran = await invokeJson<{ value: string | null }>('run-python-in-repl', {
      replId,
      pythonCode: 'import e2epkg, sys\n(e2epkg.VALUE, sys.prefix.endswith("environment"))',
    });
    assert.equal(ran.value, '(11, True)');
    assert.throws(() => execFileSync('/usr/bin/python3', ['-c', 'import e2epkg'], { stdio: 'pipe' }), 'not in the interpreter the machine runs on');
  });

  test("Copilot's machines follow the settings and the Python extension's interpreter, on a server the CLI started", async () => {
    const { node, cli, env } = cliOfTheExtension();
    const perennial = (...args: string[]) => promisify(execFile)(node, [cli, ...args], { env });
    // Undone last: the next test's server is one VS Code started.
    changes.onEnd(async () => {
      await perennial('stop');
      await toolsReachLocal();
    });
    const venvs = mkdtempSync(join(tmpdir(), 'perennial-venvs-'));
    changes.onEnd(async () => rmSync(venvs, { recursive: true, force: true }));
    const [selected, configured] = ['selected', 'configured'].map((name) => {
      execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', join(venvs, name)]);
      return join(venvs, name);
    }) as [string, string];
    // A server with its own defaults (the sandbox, the first python3 on PATH), started by a command.
    await perennial('stop');
    await perennial('machine', 'list');
    /** The `sys.prefix` (python) or workspace listing (sandbox) of a new machine from create-python-repl. */
    /**
     * Until a new machine from create-python-repl shows `expected`: its `sys.path` (python), or
     * what writing a file in its working folder answers (sandbox). VS Code restarts its connection when the definition changes,
     * cancelling a call in flight: that call is made again. A run is an MCP task in VS Code, and
     * VS Code can lose one whose connection restarts just as it starts: it is cancelled after a
     * while and made again, as a person would.
     */
    const made = (expected: (value: string) => boolean, what: string) =>
      eventually(async () => {
        const attempt = new vscode.CancellationTokenSource();
        const giveUp = setTimeout(() => attempt.cancel(), 20_000);
        try {
          const replId = await newRepl(changes);
          const probe = "import sys; sys.path if sys.platform != 'emscripten' else open('written-by-copilot.txt', 'w').write('ok')";
          const { value } = await invokeJson<{ value: string | null }>('run-python-in-repl', { replId, pythonCode: probe }, attempt.token);
          return expected(value ?? '') || undefined;
        } catch {
          return undefined;
        } finally {
          clearTimeout(giveUp);
          attempt.dispose();
        }
      }, what);
    await made((value) => value === '2', 'a sandbox machine that can write a file where it works');

    await vscode.commands.executeCommand('perennial-tests.selectInterpreter', join(selected, 'bin', 'python3'));
    changes.onEnd(async () => vscode.commands.executeCommand('perennial-tests.selectInterpreter', ''));
    await changes.setting('perennial.defaultEngine', 'python');
    await made((value) => value.includes(`'${selected}/lib`), "a python machine that sees the packages of the Python extension's interpreter");
    await changes.setting('perennial.pythonPath', join(configured, 'bin', 'python3'));
    await made((value) => value.includes(`'${configured}/lib`), 'a python machine that sees the packages of perennial.pythonPath');
  });
});
