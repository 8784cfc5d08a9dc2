import { CodedError } from '../platform/coded-error.ts';
import { InvalidRequestError } from '../shared/requests.ts';

/** No instruction with that seq on the machine. */
export class InstructionNotFoundError extends InvalidRequestError {
  static override readonly errorCode = 'InstructionNotFound';
  constructor(machine: string, seq: number) {
    super(`Machine ${machine} has no instruction ${seq}`);
  }
}

/** A new machine was asked for by a name a machine already has. */
export class MachineNameTakenError extends CodedError {
  static override readonly errorCode = 'MachineNameTaken';
  constructor(name: string) {
    super(`A machine named ${name} already exists; choose another name, or leave it out for a new one`);
  }
}

/**
 * This node no longer owns the machine: another node took it over (this one's lease had run out
 * while it was paused or cut off), or it was deleted there. Nothing this node did since its last
 * commit is kept; the request goes to the machine's owner now.
 */
export class MachineMovedError extends CodedError {
  static override readonly errorCode = 'MachineMoved';
}
