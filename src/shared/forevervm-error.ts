import type { ForeverVMErrorBody } from './types.ts';
import { CodedError } from '../platform/coded-error.ts';

/**
 * An error answer of the ForeverVM protocol: an HTTP status and a body `{"code": ..., "id": ...}`
 * (Perennial adds a readable `message`). The server answers with it; the client throws it.
 */
export class ForeverVMError extends CodedError {
  static override readonly errorCode = 'ForeverVMError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly id: string | null = null,
  ) {
    super(message);
  }

  toResponseObject(): ForeverVMErrorBody & { message: string } {
    return { code: this.code, id: this.id, message: this.message };
  }
}
