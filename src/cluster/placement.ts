/*
 * Where a request for a machine goes, as a node decides it (ClusterNode.place): apart from the
 * node's own code, so that the server, which waits on it, loads none of the cluster's clients.
 */

/**
 * This node, or the node that owns the machine, whose lease runs on for `leaseLeftMs` unrenewed
 * (a node that does not answer loses the machine then).
 */
export type Placement = { local: true } | { local: false; url: string; leaseLeftMs: number };

/** How long to wait before placing again a machine whose node did not answer: until its lease has run out, a second at most. */
export function untilLeaseEnds(placement: { leaseLeftMs: number }): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(1000, Math.max(50, placement.leaseLeftMs + 20))));
}
