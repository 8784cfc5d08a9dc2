import type { ForeverVMError as ForeverVMErrorBody } from './types.ts';

/**
 * An error answer of the ForeverVM protocol: an HTTP status and a body `{"code": ..., "id": ...}`
 * (Perennial adds a readable `message`). The server answers with it; the client throws it.
 */
export class ForeverVMError extends Error {
  static readonly errorCode = 'ForeverVMError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly id: string | null = null,
  ) {
    super(message);
    this.name = 'ForeverVMError';
  }

  toResponseObject(): ForeverVMErrorBody & { message: string } {
    return { code: this.code, id: this.id, message: this.message };
  }
}
