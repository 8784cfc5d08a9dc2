import type { LiveNode, NodeRoom } from './directory.ts';

/**
 * How much more memory another node must have for a machine to go there rather than stay on the
 * node asked: nodes that share a computer see the same memory, and a machine stays where it was
 * asked for unless elsewhere is clearly roomier.
 */
export const PLACEMENT_MARGIN_BYTES = 256 * 2 ** 20;

/** Whether a node can keep another machine warm: memory beyond its reserve, and below its warm cap. */
export function hasRoom(room: NodeRoom): boolean {
  return room.bytes > 0 && (room.maxWarm === undefined || room.warm < room.maxWarm);
}

/**
 * Where a machine that no node runs goes (a new one, one let go, one whose node died): the node
 * asked (`asked`, its id) while it has room and is not draining, unless another live node, on
 * another computer, has `PLACEMENT_MARGIN_BYTES` more memory beyond its reserve; otherwise the
 * node with room that has the most; with room nowhere, the node asked, unless it is draining. A node that does not say
 * its room (an earlier build) is given machines only when asked. Answers the node, or undefined
 * for the node asked.
 */
export function placeOn(nodes: LiveNode[], asked: string): LiveNode | undefined {
  const self = nodes.find((node) => node.id === asked);
  const others = nodes.filter((node) => node.id !== asked && !node.draining && node.room);
  const roomiest = (candidates: LiveNode[]) => candidates.sort((a, b) => b.room!.bytes - a.room!.bytes)[0];
  const best = roomiest(others.filter((node) => hasRoom(node.room!)));
  if (self?.draining) return best ?? roomiest(others);
  if (!self?.room || !best) return undefined;
  // Nodes on one computer see the same memory, measured at different moments: only a node without room sends one there.
  const sameComputer = self.room.computer !== undefined && self.room.computer === best.room!.computer;
  if (hasRoom(self.room) && (sameComputer || best.room!.bytes < self.room.bytes + PLACEMENT_MARGIN_BYTES)) return undefined;
  return best;
}
