/** Ends the CLI with `code`; only `index.ts` turns it into a process exit. */
export class ExitError extends Error {
  constructor(
    readonly code: number,
    message = '',
  ) {
    super(message);
    this.name = 'ExitError';
  }
}
