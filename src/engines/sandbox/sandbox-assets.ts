import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The built sandbox process (`main.js`). The bundle has it beside itself in
 * `sandbox/`; from sources (tests, tsx) it is the last build's `dist/sandbox/`.
 */
export function sandboxChildDir(): string {
  const candidates = [fileURLToPath(new URL('./sandbox/', import.meta.url)), fileURLToPath(new URL('../../../dist/sandbox/', import.meta.url))];
  const found = candidates.find((dir) => existsSync(join(dir, 'main.js')));
  if (!found) throw new Error(`The sandbox engine is not built: none of ${candidates.join(', ')} holds main.js (run npm run build)`);
  return found;
}
