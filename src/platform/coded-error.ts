/**
 * An error that every surface names the same way: its class's `errorCode` is what the HTTP API,
 * the CLI and MCP call it (a status, an exit code, a message), and its `name` is its class's.
 */
export class CodedError extends Error {
  static readonly errorCode: string = 'Error';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The `errorCode` of `error`'s class, when it has one. */
export function errorCodeOf(error: unknown): string | undefined {
  const code = (error as { constructor?: { errorCode?: unknown } } | null)?.constructor?.errorCode;
  return typeof code === 'string' ? code : undefined;
}
