/**
 * Every command the extension contributes (package.json's `contributes.commands`, which a test
 * holds to this table), by what it does: code registers and runs them by these names only.
 */
export const COMMANDS = {
  runSelection: 'perennial.runSelection',
  runCell: 'perennial.runCell',
  selectMachine: 'perennial.selectMachine',
  showOutput: 'perennial.showOutput',
  interrupt: 'perennial.interrupt',
  newMachine: 'perennial.newMachine',
  refresh: 'perennial.refresh',
  deleteMachine: 'perennial.deleteMachine',
  forkMachine: 'perennial.forkMachine',
  installPackages: 'perennial.installPackages',
  takeCheckpoint: 'perennial.takeCheckpoint',
  rollback: 'perennial.rollback',
  upgradeMachine: 'perennial.upgradeMachine',
  copyMachineName: 'perennial.copyMachineName',
  selectNotebookMachine: 'perennial.notebook.selectMachine',
  restartNotebook: 'perennial.notebook.restart',
  setForeverVMToken: 'perennial.setForeverVMToken',
  removeForeverVMToken: 'perennial.removeForeverVMToken',
  signInToTeam: 'perennial.signInToTeam',
  signOutOfTeam: 'perennial.signOutOfTeam',
} as const;
