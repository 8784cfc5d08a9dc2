/**
 * A process that owns a data dir through a MachineManager, for tests that must kill -9 the owner.
 * Commands arrive as JSON lines on stdin; events leave as JSON lines on stdout.
 * Usage: node --import tsx test/helpers/manager-host.ts <dataDir> [<saveDelayMs>, default 100]
 */
import { createInterface } from 'node:readline';
import { MachineManager } from '../../src/machines/machine-manager.ts';
import type { EngineName } from '../../src/shared/requests.ts';

const manager = await MachineManager.open({ dataDir: process.argv[2]!, saveDelayMs: Number(process.argv[3] ?? 100) });
const say = (message: object) => process.stdout.write(JSON.stringify(message) + '\n');
manager.on('event', (event) => {
  say({ event });
  // The test kills the owner while this process runs the machine, then checks it died too.
  if (event.type === 'state' && event.state === 'busy') say({ busyPid: manager.processId(event.name) });
});
say({ ready: true, pid: process.pid });

for await (const line of createInterface({ input: process.stdin })) {
  const command = JSON.parse(line) as {
    op: 'create' | 'exec' | 'churn' | 'checkpoint';
    engine?: EngineName;
    name?: string;
    code?: string;
    python?: string;
    label?: string;
  };
  if (command.op === 'create') say({ created: (await manager.create({ engine: command.engine, python: command.python })).name });
  else if (command.op === 'churn') {
    // Writes a new file and takes a checkpoint, again and again, until the test kills this process.
    for (let i = 0; ; i++) {
      await manager.run(command.name!, `open("data${i}.bin", "wb").write(__import__("os").urandom(1 << 20))`);
      say({ checkpoint: await manager.checkpoint(command.name!, { label: `c${i}` }), i });
    }
  } else if (command.op === 'checkpoint') {
    // Not awaited here: the commands after it are taken while it is written.
    void manager.checkpoint(command.name!, { label: command.label! }).then((checkpoint) => say({ checkpoint }));
  } else {
    const { seq } = await manager.exec(command.name!, command.code!, { timeoutSeconds: 600 });
    say({ accepted: seq });
  }
}
