import * as checkpoints from './checkpoints.ts';
import * as files from './files.ts';
import * as machines from './machines.ts';
import * as running from './running.ts';
import * as state from './state.ts';
import * as view from './view.ts';

export type { RunOutput } from './running.ts';
export type { FollowOutput, ReplDescription } from './view.ts';

/** Every tool, in the order a client lists them. */
export const TOOLS = [
  machines.create,
  running.runPython,
  running.runFile,
  running.waitForInstruction,
  machines.list,
  machines.remove,
  running.interrupt,
  state.listVariables,
  view.describe,
  view.follow,
  state.getVariable,
  state.reset,
  state.inspect,
  checkpoints.fork,
  checkpoints.checkpoint,
  checkpoints.listCheckpoints,
  checkpoints.rollback,
  files.installPackages,
  state.history,
  files.listFiles,
  files.readFile,
  files.writeFile,
];
