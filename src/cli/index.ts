import { ENGINE_NAMES } from '../engines/descriptors.ts';
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { defaultDataDir } from '../platform/data-dir.ts';
import { DataDirLockedError } from '../platform/data-dir-lock.ts';
import type { InstallOptions } from './commands/install.ts';
import type { CliContext } from './context.ts';
import { ExitError } from './errors.ts';
import { answerWithinSeconds, collectTag, inlineImageCount, portNumber, positiveInteger, positiveNumber, taskAfterSeconds, timeoutSeconds } from './options.ts';
import { processTerminal } from './result-printer.ts';
import { VERSION } from '../shared/version.ts';
import { errorCodeOf } from '../platform/coded-error.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';

/**
 * The commands' modules, each loaded when one of its commands runs: a command loads only its own
 * code (a Jupyter kernel's start, which Jupyter waits for, does not load the server's or MCP's).
 */
const COMMAND_MODULES = {
  checkpoint: () => import('./commands/checkpoint.ts'),
  exec: () => import('./commands/exec.ts'),
  install: () => import('./commands/install.ts'),
  kernel: () => import('./commands/kernel.ts'),
  login: () => import('./commands/login.ts'),
  machine: () => import('./commands/machine.ts'),
  mcp: () => import('./commands/mcp.ts'),
  repl: () => import('./commands/repl.ts'),
  serve: () => import('./commands/serve.ts'),
  status: () => import('./commands/status.ts'),
  stop: () => import('./commands/stop.ts'),
  team: () => import('./commands/team.ts'),
};
const lazy = <Name extends keyof typeof COMMAND_MODULES>(name: Name): ReturnType<(typeof COMMAND_MODULES)[Name]> =>
  COMMAND_MODULES[name]() as ReturnType<(typeof COMMAND_MODULES)[Name]>;

function buildProgram(): Command {
  const program = new Command('perennial')
    .description('Python REPLs that never die: persistent machines, swapped to disk when idle.')
    .version(VERSION)
    .option('--data-dir <dir>', 'where machines live (default: $PERENNIAL_HOME or the user data folder)')
    .addOption(new Option('--backend <backend>', 'local machines, or hosted ForeverVM').choices(['local', 'forevervm']).default('local'))
    .addOption(
      new Option('--server <url>', "a Perennial server elsewhere (a cluster's node, or its load balancer), with its token in $PERENNIAL_TOKEN").env(
        'PERENNIAL_SERVER',
      ),
    )
    .showHelpAfterError();

  const context = (): CliContext => {
    const global = program.opts<{ dataDir?: string; backend: 'local' | 'forevervm'; server?: string }>();
    // Absolute: the server and the machines' kernels run elsewhere than where the command was typed.
    const dataDir = resolve(global.dataDir ?? defaultDataDir());
    return {
      dataDir,
      backend: global.backend,
      server: global.server,
      // Loaded when a command needs a client: not for --help, nor in a kernel's first second.
      openClient: async () => {
        if (global.server) return (await import('./context.ts')).serverClient(global.server, dataDir);
        if (global.backend === 'forevervm') return (await import('../client/forevervm-config.ts')).hostedClient();
        return (await import('../client/local-server-connection.ts')).connectToLocalServer(dataDir);
      },
      term: processTerminal,
      stdin: process.stdin,
      historyFile: join(dataDir, 'repl_history'),
    };
  };
  const engineOption = () => new Option('--engine <engine>', 'engine of a new machine').choices(ENGINE_NAMES);
  const pythonOption = () =>
    new Option(
      '--python <path>',
      'python engine: the interpreter of a new machine (default: $PERENNIAL_PYTHON, else the first of py -3, python, python3 on Windows, python3, python elsewhere)',
    );

  program
    .command('exec')
    .description('run code on a machine (a new one without --machine) and print its output and value')
    .argument('<code>', 'Python code, or - to read it from stdin')
    .option('-m, --machine <name>', 'machine to run on')
    .addOption(engineOption())
    .addOption(pythonOption())
    .option('-t, --timeout <seconds>', 'interrupt the code after this long; 0: no limit (default 15)', timeoutSeconds)
    .option('--images <dir>', 'save figures as PNG files in this folder (default: perennial-figures/MACHINE in the temporary folder)')
    .action((code: string, options) => lazy('exec').then(({ execCommand }) => execCommand(context(), code, options)));

  program
    .command('repl')
    .description('interactive prompt on a machine (a new one without NAME)')
    .argument('[name]', 'machine to attach to')
    .addOption(engineOption())
    .addOption(pythonOption())
    .option('-t, --timeout <seconds>', 'interrupt each statement after this long (default: no limit, as in Python)', timeoutSeconds)
    .option('--images <dir>', 'save figures as PNG files in this folder (default: perennial-figures/MACHINE in the temporary folder)')
    .action((name: string | undefined, options) => lazy('repl').then(({ replCommand }) => replCommand(context(), name, options)));

  program
    .command('serve')
    .description('run the local server (ForeverVM API and WebSocket REPL) on this data dir')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'port; 0 or none: any free port (written to server.json)', portNumber)
    .addOption(
      new Option(
        '--engine <engine>',
        `engine of machines created without one, as ForeverVM clients create them (default: the first of ${ENGINE_NAMES.join(', ')} available here)`,
      )
        .choices(ENGINE_NAMES)
        .env('PERENNIAL_ENGINE'),
    )
    .option('--timeout <seconds>', 'timeout of an instruction sent without one, as ForeverVM clients send them; 0: no limit (default 15)', timeoutSeconds)
    .option('--exit-when-idle <seconds>', 'stop after this long with no request, connection or busy machine', positiveNumber)
    .option('--idle-seconds <seconds>', 'swap a machine out after this long without instructions (default 300)', positiveNumber)
    .addOption(
      new Option('--max-warm <n>', 'keep at most this many machines warm (default: as many as memory allows, keeping a tenth of it free)')
        .argParser(positiveInteger)
        .env('PERENNIAL_MAX_WARM'),
    )
    .option(
      '--pool-idle-seconds <seconds>',
      'stop the sandbox processes kept ready after this long without a sandbox machine made or swapped in (default 300)',
      positiveNumber,
    )
    .option(
      '--heartbeat <seconds>',
      'longest silence a waiting client sees: a long MCP call gets its elapsed time as progress, for clients that drop quiet calls (default 10)',
      positiveNumber,
    )
    .option(
      '--task-after <seconds>',
      'an MCP call of 2026-07-28 that can be a task becomes one once it has run this long; quicker work is answered at once (default 1; 0: at once)',
      taskAfterSeconds,
    )
    .option(
      '--answer-within <seconds>',
      'an MCP call that runs code, for a client that takes no task, answers by then with the output so far while the code runs on (default 40, under the 60 s MCP clients wait; 0: at its end)',
      answerWithinSeconds,
    )
    .option(
      '--cluster <postgres-url>',
      `serve as a node of a cluster whose machines' owners are in this PostgreSQL database (or ${'$'}PERENNIAL_CLUSTER); needs --store`,
    )
    .option(
      '--store <s3-url>',
      `the cluster's bucket, s3://bucket/prefix, where machines are kept (or ${'$'}PERENNIAL_STORE); credentials as the AWS SDK finds them`,
    )
    .option('--store-endpoint <url>', `an S3-compatible store that is not AWS (MinIO, Ceph, Garage...) (or ${'$'}PERENNIAL_STORE_ENDPOINT)`)
    .option('--store-region <region>', `the bucket's region (or ${'$'}PERENNIAL_STORE_REGION, ${'$'}AWS_REGION; default us-east-1)`)
    .option(
      '--lease <seconds>',
      `how long a node's lease lasts unrenewed: how soon another node takes its machines after it stops (or ${'$'}PERENNIAL_LEASE; default 15)`,
    )
    .option('--advertise <url>', `where other nodes reach this one (or ${'$'}PERENNIAL_ADVERTISE_URL; default the address it listens on)`)
    .option('--settings <file>', "settings for the cluster, read after the flags and the environment (default: the data dir's settings.json)")
    .option(
      '--memory-reserve <MiB>',
      'memory kept free for the rest of the system: machines stay warm, and a node of a cluster takes new machines, while more is available (default: a tenth of it, at least 1 GiB)',
      positiveInteger,
    )
    .option('--drain', "instead of serving: hand every machine of the cluster's node serving the data dir (or --server) to the other nodes, then stop it")
    .action((options) => lazy('serve').then(({ serveCommand }) => serveCommand(context(), options)));

  program
    .command('stop')
    .description("stop the data dir's local server (one you or a command started); it saves every machine first")
    .action(() => lazy('stop').then(({ stopCommand }) => stopCommand(context())));

  program
    .command('mcp')
    .description('run the MCP server on stdin/stdout (for MCP clients that start it); --backend chooses its machines')
    .addOption(
      new Option('--engine <engine>', "engine of the machines its tools create without one (default: the server's)")
        .choices(ENGINE_NAMES)
        .env('PERENNIAL_ENGINE'),
    )
    .addOption(pythonOption())
    .option('--workspace <dir>', 'sandbox engine: mount this folder at /workspace in the machines its tools create (read-only)')
    .option('--workspace-write', 'sandbox engine: mount the workspace read-write')
    .option('--network', 'sandbox engine: let the machines its tools create reach the network')
    .option('--inline-images <n>', 'figures a result shows as images, 0 to 100; the rest go as resource links only (default 1)', inlineImageCount)
    .option(
      '--heartbeat <seconds>',
      'longest silence a waiting client sees: a long MCP call gets its elapsed time as progress, for clients that drop quiet calls (default 10)',
      positiveNumber,
    )
    .option(
      '--task-after <seconds>',
      'an MCP call of 2026-07-28 that can be a task becomes one once it has run this long; quicker work is answered at once (default 1; 0: at once)',
      taskAfterSeconds,
    )
    .option(
      '--answer-within <seconds>',
      'an MCP call that runs code, for a client that takes no task, answers by then with the output so far while the code runs on (default 40, under the 60 s MCP clients wait; 0: at its end)',
      answerWithinSeconds,
    )
    .action((options) => lazy('mcp').then(({ mcpCommand }) => mcpCommand(context(), options)));

  program
    .command('status')
    .description('the local server (or, with --backend forevervm, the hosted account) and its machines')
    .option('--json', 'print JSON')
    .action((options) => lazy('status').then(({ statusCommand }) => statusCommand(context(), options)));

  program
    .command('login')
    .description("save a token: your key for a Perennial server elsewhere (with --server URL: a team's), else a ForeverVM token for --backend forevervm")
    .option('--token <token>', 'the token (default: ask, or read stdin)')
    .option('--base-url <url>', 'the ForeverVM API (default https://api.forevervm.com)')
    .action((options) => lazy('login').then(({ loginCommand }) => loginCommand(context(), options)));

  const kernel = program
    .command('kernel')
    .description('a Jupyter kernel whose notebooks run on Perennial machines that outlive every kernel (install it first: perennial kernel install)')
    .option('--connection-file <file>', 'the connection file Jupyter starts a kernel with')
    .option('--machine <name>', "run on this machine, whichever notebook (default: the notebook's own); with install, the kernelspec's")
    .addOption(engineOption())
    .addOption(pythonOption())
    .action((options) => lazy('kernel').then(({ kernelCommand }) => kernelCommand(context(), options)));
  kernel
    .command('install')
    .description(
      "write a kernelspec where Jupyter finds it (the user's Jupyter folder unless told otherwise); its notebooks run on your Python (--python, else the active environment's, else the first on PATH), or with --engine sandbox in the sandbox",
    )
    .option('--user', "in the user's Jupyter folder (the default)")
    .option('--sys-prefix', "in the active virtual or conda environment's")
    .option('--prefix <dir>', 'in DIR/share/jupyter')
    .option('--name <name>', "the kernel's name (default perennial; perennial-sandbox with --engine sandbox, perennial-MACHINE with --machine)")
    .option('--display-name <text>', 'what Jupyter shows (default: Python (Perennial))')
    .addHelpText('after', "\nAnd the kernel's: --engine, --python (a new machine's), --machine NAME (every notebook on that one).")
    // --engine, --python and --machine are the kernel command's own too, which commander gives them to.
    .action((options) =>
      lazy('kernel').then(({ kernelInstallCommand }) =>
        kernelInstallCommand(context(), program.opts().dataDir !== undefined || !!process.env.PERENNIAL_HOME, { ...kernel.opts(), ...options }),
      ),
    );
  kernel
    .command('list')
    .description('the Perennial kernels Jupyter finds, and where')
    .option('--json', 'print JSON')
    .action((options) => lazy('kernel').then(({ kernelListCommand }) => kernelListCommand(context(), options)));
  kernel
    .command('remove')
    .alias('rm')
    .description('remove a Perennial kernelspec (the machines of its notebooks stay)')
    .argument('<name>')
    .action((name: string) => lazy('kernel').then(({ kernelRemoveCommand }) => kernelRemoveCommand(context(), name)));

  const machine = program.command('machine').description('create, list, fork, swap and remove machines');
  machine
    .command('new')
    .description('create a machine and print its name')
    .option('--name <name>', 'its name (letters, digits, - and _); default: a new readable one, such as brave-otter')
    .addOption(engineOption())
    .option('--tag <key=value>', 'tag the machine (repeatable)', collectTag)
    .option('--memory-mb <n>', 'memory cap in MiB', positiveInteger)
    .addOption(pythonOption())
    .option('--workspace <dir>', 'sandbox engine: mount this folder at /workspace (read-only)')
    .option('--workspace-write', 'sandbox engine: mount the workspace read-write')
    .option('--workdir <dir>', 'either engine: work in this folder (relative paths and imports are its; the sandbox mounts it read-write at the same path)')
    .option('--network', 'sandbox engine: let the machine reach the network')
    .action((options) => lazy('machine').then(({ machineNewCommand }) => machineNewCommand(context(), options)));
  machine
    .command('list')
    .alias('ls')
    .description('list machines, newest first')
    .option('--tag <key=value>', 'only machines with this tag (repeatable; all must match)', collectTag)
    .option('--json', 'print JSON')
    .action((options) => lazy('machine').then(({ machineListCommand }) => machineListCommand(context(), options)));
  machine
    .command('fork')
    .description("make a new machine with this one's state now, and print its name")
    .argument('<name>')
    .option('--tag <key=value>', "tag the fork (repeatable), on top of the origin's tags and forked_from", collectTag)
    .action((name: string, options) => lazy('machine').then(({ machineForkCommand }) => machineForkCommand(context(), name, options)));
  machine
    .command('upgrade')
    .description('move a machine made on an older runtime (Pyodide) onto the newest, keeping a checkpoint of the state before')
    .argument('<name>')
    .action((name: string) => lazy('machine').then(({ machineUpgradeCommand }) => machineUpgradeCommand(context(), name)));
  machine
    .command('rm')
    .description('delete machines and all their files')
    .argument('<names...>')
    .option('-f, --force', 'also a machine that runs an instruction (it is stopped)')
    .action((names: string[], options: { force?: boolean }) =>
      lazy('machine').then(({ machineRemoveCommand }) => machineRemoveCommand(context(), names, options)),
    );
  machine
    .command('swap')
    .description('swap machines out to disk now')
    .argument('<names...>')
    .action((names: string[]) => lazy('machine').then(({ machineSwapCommand }) => machineSwapCommand(context(), names)));

  machine
    .command('share')
    .description('team server: let a person (or everyone) read a machine of yours, or run code on it with --run')
    .argument('<name>')
    .argument('<person>', 'a person of the team, or everyone')
    .option('--run', 'let them run code too (default: read its variables, history and output)')
    .action((name: string, person: string, options: { run?: boolean }) =>
      lazy('team').then(({ machineShareCommand }) => machineShareCommand(context(), name, person, options)),
    );
  machine
    .command('unshare')
    .description('team server: end a share')
    .argument('<name>')
    .argument('<person>', 'a person of the team, or everyone')
    .action((name: string, person: string) => lazy('team').then(({ machineUnshareCommand }) => machineUnshareCommand(context(), name, person)));
  machine
    .command('give')
    .description("team server: make a machine another person's (its owner, or the operator for one who left); its shares end")
    .argument('<name>')
    .argument('<person>')
    .action((name: string, person: string) => lazy('team').then(({ machineGiveCommand }) => machineGiveCommand(context(), name, person)));

  program
    .command('audit')
    .description("a team's audit log (an admin): who did what to which machine, from where, and how it ended, as JSON lines")
    .option('--person <name>', "this person's doings ('unknown': refused credentials)")
    .option('--machine <name>', 'about this machine')
    .option('--action <action>', 'made, ran, read, shared, deleted, key made, signed in, ...')
    .option('--since <when>', 'a date, or a span back such as 12h or 7d')
    .option('--limit <n>', 'the newest this many (default 1000)', positiveInteger)
    .action((options) => lazy('team').then(({ auditCommand }) => auditCommand(context(), options)));
  const team = program.command('team').description('a server for a team: people, their keys, quotas (see docs/team.md)');
  team
    .command('init')
    .description("make the local server a team's: OWNER is its first admin and owns its machines; prints OWNER's first key")
    .requiredOption('--owner <name>', 'the first admin')
    .action((options: { owner: string }) => lazy('team').then(({ teamInitCommand }) => teamInitCommand(context(), options)));
  const person = team.command('person').description("the team's people");
  person
    .command('add')
    .argument('<name>')
    .option('--admin', 'an admin: runs the team (people, keys, quotas, the audit log)')
    .option('--subject <sub>', "who they sign in as at the team's identity provider (OpenID Connect's sub)")
    .action((name: string, options) => lazy('team').then(({ personAddCommand }) => personAddCommand(context(), name, options)));
  person
    .command('list')
    .option('--json', 'print JSON')
    .action((options) => lazy('team').then(({ personListCommand }) => personListCommand(context(), options)));
  person
    .command('remove')
    .description('take a person out of the team and revoke their keys; their machines are kept')
    .argument('<name>')
    .action((name: string) => lazy('team').then(({ personRemoveCommand }) => personRemoveCommand(context(), name)));
  const key = team.command('key').description('keys: bearer tokens of a person, with scopes and an expiry');
  key
    .command('create')
    .description('make a key (your own, or with --person as an admin) and print it, this once')
    .requiredOption('--name <name>', 'what it is for ("laptop", "ci")')
    .option('--person <name>', 'whose (an admin); default: yours')
    .option('--scopes <list>', 'read, run, manage, admin, separated by commas', 'read,run,manage')
    .option('--expires <when>', 'a date, or a span such as 30d or 12h')
    .action((options) => lazy('team').then(({ keyCreateCommand }) => keyCreateCommand(context(), options)));
  key
    .command('list')
    .option('--person <name>', "an admin: another person's")
    .option('--json', 'print JSON')
    .action((options) => lazy('team').then(({ keyListCommand }) => keyListCommand(context(), options)));
  key
    .command('revoke')
    .argument('<id>')
    .action((id: string) => lazy('team').then(({ keyRevokeCommand }) => keyRevokeCommand(context(), id)));
  const signIn = team.command('sign-in').description("how people sign in from MCP clients: the team's identity provider (OpenID Connect)");
  signIn
    .command('show')
    .option('--json', 'print JSON')
    .action((options) => lazy('team').then(({ signInShowCommand }) => signInShowCommand(context(), options)));
  signIn
    .command('set')
    .description("an admin: MCP clients sign people in at --issuer, for this server's MCP endpoint --resource")
    .option('--issuer <url>', "the identity provider's issuer URL")
    .option('--resource <url>', "this server's MCP endpoint as people reach it, e.g. https://perennial.example.com/mcp")
    .option('--off', 'people sign in with keys only')
    .action((options) => lazy('team').then(({ signInSetCommand }) => signInSetCommand(context(), options)));
  const quota = team.command('quota').description('quotas: machines, warm memory and disk per person');
  quota
    .command('show')
    .description("a quota: yours, or with --person (an admin) anyone's")
    .option('--person <name>')
    .option('--json', 'print JSON')
    .action((options) => lazy('team').then(({ quotaCommand }) => quotaCommand(context(), options)));
  quota
    .command('set')
    .description("set a person's quota (--person), or the default")
    .option('--person <name>')
    .option('--machines <n>', 'machines they may own', positiveInteger)
    .option('--warm-memory-mb <n>', 'memory their warm machines may hold, MiB', positiveInteger)
    .option('--disk-mb <n>', 'disk their machines may keep, MiB', positiveInteger)
    .action((options) => lazy('team').then(({ quotaSetCommand }) => quotaSetCommand(context(), options)));

  program
    .command('checkpoint')
    .description("save a machine's state now as a checkpoint, and print its id")
    .argument('<name>')
    .option('--label <label>', 'a name to roll back to it by')
    .action((name: string, options) => lazy('checkpoint').then(({ checkpointCommand }) => checkpointCommand(context(), name, options)));
  program
    .command('checkpoints')
    .description("list a machine's checkpoints, oldest first (taken ones, and the newest automatic ones)")
    .argument('<name>')
    .option('--json', 'print JSON')
    .action((name: string, options) => lazy('checkpoint').then(({ checkpointsCommand }) => checkpointsCommand(context(), name, options)));
  program
    .command('install')
    .description(
      "install packages into a machine, and into nothing else: Pyodide packages into a sandbox machine, pip packages into a python machine's own environment",
    )
    .argument('<name>', 'the machine')
    .argument(
      '[packages...]',
      'package names, with versions as pip takes them (pandas==2.2); for a python machine, also wheels and project folders (./dist/pkg.whl)',
    )
    .option('-r, --requirement <file>', 'python machine: install what this requirements file lists')
    .option('-f, --find-links <dir>', 'python machine: look for the packages in this folder of wheels too (a computer without a package index)')
    .action((name: string, packages: string[], options: InstallOptions) =>
      lazy('install').then(({ installCommand }) => installCommand(context(), name, packages, options)),
    );

  program
    .command('rollback')
    .description('return a machine to a checkpoint (by id or label); what runs is interrupted first')
    .argument('<name>')
    .argument('<checkpoint>')
    .action((name: string, checkpoint: string) => lazy('checkpoint').then(({ rollbackCommand }) => rollbackCommand(context(), name, checkpoint)));

  return program;
}

async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof ExitError) {
      if (error.message) process.stderr.write(error.message + '\n');
      return error.code;
    }
    const code = errorCodeOf(error);
    if (error instanceof DataDirLockedError) {
      process.stderr.write(`perennial: ${error.message}. Stop it, or use --data-dir for another data dir.\n`);
    } else if (code) {
      const hint = error instanceof ForeverVMError && error.code === 'MachineNotFound' ? ' (perennial machine list shows every machine)' : '';
      process.stderr.write(`perennial: ${(error as Error).message}${hint}\n`);
    } else {
      process.stderr.write(`perennial: internal error: ${(error as Error).stack ?? String(error)}\n`);
    }
    return 1;
  }
}

process.exitCode = await main(process.argv);
