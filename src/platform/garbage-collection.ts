/**
 * Full garbage collections, asked for where V8 would not run one: it collects when JavaScript
 * allocates, which an idle process hardly does. What a server's start left, or the buffers a
 * snapshot crossed in (tens of MiB; ~45 MB after the first base image was built), stayed for
 * hours; so did a sandbox's throwaway machine.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Quiet for this long: a collection (~10 ms here) does not delay work that comes in bursts. */
const QUIET_MS = 2000;

let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | undefined;

/** Collects once nothing has called this for `QUIET_MS` (one collection: the server holds no Pyodide). */
export function collectWhenQuiet(): void {
  clearTimeout(timer);
  timer = setTimeout(collectOnce, QUIET_MS);
  timer.unref();
}

function collectOnce(): void {
  collect ??= exposedGc();
  collect();
}

/**
 * A full collection, then another once the tasks the first queued have run. Pyodide's proxies are
 * in a FinalizationRegistry whose callback holds its instance, which V8 seems to keep until the
 * registry's cleanup task has run: one collection left a pooled sandbox's throwaway machine
 * (~60 MiB) in place about one run in ten (Node 24); two freed it in 30 runs of 30.
 */
export function collectGarbage(): void {
  collectOnce();
  setTimeout(collectOnce, 50).unref();
}

/**
 * V8's `gc`, which `--expose-gc` puts on a context made while the flag is set, as Jest takes it:
 * the process may have been started by anyone (a client, VS Code, a person), without the flag.
 */
function exposedGc(): () => void {
  const own = (globalThis as { gc?: () => void }).gc;
  if (own) return own;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  return gc;
}
