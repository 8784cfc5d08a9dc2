import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** What a task id names: an instruction of a machine, or work kept only in this process's memory. */
export type TaskSubject = { kind: 'instruction'; machine: string; seq: number } | { kind: 'in-memory' };

/**
 * Task ids. An instruction's is the machine and the instruction's number, sealed with a key: the
 * same from any connection and after any restart (the machine's history has the rest), and
 * impossible to guess without the key, as the Tasks specification asks. Work that is not an
 * instruction (an install) gets a random id.
 */
export class TaskIds {
  readonly #key: Buffer;

  /** `secret`: what the key is made from; ids made with another secret are not read. */
  constructor(secret: string) {
    this.#key = createHmac('sha256', 'perennial task ids').update(secret).digest();
  }

  forInstruction(machine: string, seq: number): string {
    const named = `${Buffer.from(machine).toString('base64url')}.${seq}`;
    return `i.${named}.${this.#seal(named)}`;
  }

  fresh(): string {
    return `m.${randomBytes(16).toString('base64url')}`;
  }

  /** What `taskId` names; undefined when it is not an id these keys made. */
  read(taskId: string): TaskSubject | undefined {
    const [kind, machine, seq, seal, ...rest] = taskId.split('.');
    if (kind === 'm' && machine && seq === undefined) return { kind: 'in-memory' };
    if (kind !== 'i' || !machine || !seq || !seal || rest.length || !/^\d+$/.test(seq)) return undefined;
    const expected = Buffer.from(this.#seal(`${machine}.${seq}`));
    const given = Buffer.from(seal);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return { kind: 'instruction', machine: Buffer.from(machine, 'base64url').toString(), seq: Number(seq) };
  }

  #seal(named: string): string {
    return createHmac('sha256', this.#key).update(named).digest().subarray(0, 16).toString('base64url');
  }
}
