/**
 * What a caller may do to one machine, in order: read it (variables, history, output, files), run
 * code on it, own it (change, checkpoint, roll back, share, delete). On a server for one person
 * the caller owns every machine; on a team's, the owner does, and a share gives read or run.
 */
export const RIGHTS = ['read', 'run', 'own'] as const;
export type Right = (typeof RIGHTS)[number];

/** Whether `held` covers `needed`. */
export function covers(held: Right, needed: Right): boolean {
  return RIGHTS.indexOf(held) >= RIGHTS.indexOf(needed);
}
