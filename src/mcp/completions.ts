import type { PerennialClient } from '../shared/perennial-client.ts';

/** Completes a machine name (a `replId`) from its first characters. */
export function completeMachineName(client: PerennialClient): (prefix: string) => Promise<string[]> {
  return async (prefix) => (await client.list()).map((m) => m.name).filter((name) => name.startsWith(prefix));
}

/**
 * Completes a path inside the machine named by the request's `replId` argument, a folder at a
 * time: `data/t` lists `data/` and offers what starts with `t`; folders end with `/`.
 */
export function completeMachinePath(client: PerennialClient): (value: string, context?: { arguments?: Record<string, string> }) => Promise<string[]> {
  return async (value, context) => {
    const machine = context?.arguments?.replId;
    if (!machine) return [];
    const folder = value.slice(0, value.lastIndexOf('/') + 1);
    const listing = await client.listFiles(machine, folder).catch(() => null);
    return (listing?.entries ?? []).map((e) => `${folder}${e.name}${e.type === 'dir' ? '/' : ''}`).filter((path) => path.startsWith(value));
  };
}
