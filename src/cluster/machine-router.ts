/*
 * Where a request for a machine goes in a cluster, and what happens when that place fails: one
 * policy for every surface (the HTTP and WebSocket forwarding, the MCP endpoints' client). Apart
 * from the node's own code, so that the server, which routes through it, loads none of the
 * cluster's clients.
 */
import { CodedError, errorCodeOf } from '../platform/coded-error.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';

/**
 * This node, or the node that owns the machine, whose lease runs on for `leaseLeftMs` unrenewed
 * (a node that does not answer loses the machine then).
 */
export type Placement = { local: true } | { local: false; url: string; leaseLeftMs: number };

/** The node a request was to go to could not be reached (it stopped; its lease has not run out yet). Nothing reached it. */
export class NodeUnreachableError extends CodedError {
  static override readonly errorCode = 'NodeUnreachable';
}

/** A request for a machine, as each surface carries it out: on this node, or sent to the node at `url`. */
export interface Route<T> {
  here(): Promise<T>;
  there(url: string): Promise<T>;
}

/** How many nodes a request may pass through: one forwards it once, a second time only while the machine moves. */
const MOST_HOPS = 2;

/**
 * Routes each request for a machine to where it runs. A machine that moved meanwhile (its node
 * answered that it no longer runs it, or this node lost it) is placed again, once. A node that
 * cannot be reached has stopped or died: its machines are taken over once its lease runs out, so
 * the request waits and is placed again until then (`patienceMs`: the lease and a margin). A
 * request that did reach a node that then died is never sent again: what it did is lost with
 * that node, and the machine's next result says so.
 */
export class MachineRouter {
  /**
   * `place`: where a request for machine `name` goes (null: a machine to be made); `forwarded`:
   * another node sent it here, and it is not sent on for load alone.
   */
  constructor(
    private readonly place: (name: string | null, forwarded: boolean) => Promise<Placement>,
    private readonly patienceMs: number,
  ) {}

  /**
   * Carries out `route` where machine `name` runs (null: where a new machine is made; made here
   * when the node chosen cannot be reached). `hops`: how many nodes the request has passed through.
   */
  async route<T>(name: string | null, route: Route<T>, hops = 0): Promise<T> {
    const deadline = Date.now() + this.patienceMs;
    let moved = false;
    for (;;) {
      const placement = await this.place(name, hops > 0);
      try {
        if (placement.local) return await route.here();
        if (hops >= MOST_HOPS)
          throw new ForeverVMError(
            503,
            'MachineMoving',
            `${name === null ? 'The new machine' : `Machine ${name}`} is moving between nodes; send the request again`,
          );
        return await route.there(placement.url);
      } catch (error) {
        if (name === null && !placement.local && unreachable(error)) return route.here();
        if (isMoved(error) && !moved) moved = true;
        else if (placement.local || !unreachable(error) || Date.now() > deadline) throw error;
        else await untilLeaseEnds(placement);
      }
    }
  }
}

/** Whether an error says the machine moved to another node (in this process, or as another node answered). */
function isMoved(error: unknown): boolean {
  return errorCodeOf(error) === 'MachineMoved' || (error as { code?: unknown }).code === 'MachineMoved';
}

/** Whether an error says nothing reached the node: the forwarding's, or a client's (`Unreachable`). */
function unreachable(error: unknown): boolean {
  return error instanceof NodeUnreachableError || (error as { code?: unknown }).code === 'Unreachable';
}

/** How long to wait before placing again a machine whose node did not answer: until its lease has run out, a second at most. */
function untilLeaseEnds(placement: { leaseLeftMs: number }): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(1000, Math.max(50, placement.leaseLeftMs + 20))));
}
