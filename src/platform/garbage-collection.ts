/**
 * A full garbage collection once the process has been quiet for a while. V8 collects when
 * JavaScript allocates, which an idle server hardly does: what starting up left, or the buffers a
 * snapshot crossed in (tens of MiB; ~45 MB after the first base image was built), stayed for hours.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Quiet for this long: a collection (~10 ms here) does not delay work that comes in bursts. */
const QUIET_MS = 2000;

let timer: NodeJS.Timeout | undefined;
let collect: (() => void) | undefined;

/** Collects once nothing has called this for `QUIET_MS`. */
export function collectWhenQuiet(): void {
  clearTimeout(timer);
  timer = setTimeout(() => {
    collect ??= exposedGc();
    collect();
  }, QUIET_MS);
  timer.unref();
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
