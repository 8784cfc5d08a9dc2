/**
 * The MCP App view's size: the one page a host loads for it (`dist/view/machine.html`, from the
 * last build), its script and its style, raw and as gzip would send them. Budget: ~100 KB raw.
 */
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { row } from './stats.ts';

const PAGE = new URL('../dist/view/machine.html', import.meta.url);
const BUDGET_BYTES = 100 * 1000;

export async function benchMcpApp(): Promise<void> {
  const page = await readFile(PAGE, 'utf8').catch(() => {
    throw new Error(`${PAGE.pathname} is not there: run npm run build first`);
  });
  const part = (tag: string) => new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(page)?.[1] ?? '';
  const kb = (text: string) => `${(Buffer.byteLength(text) / 1000).toFixed(1)} KB`;
  const gzip = (text: string) => `${(gzipSync(text, { level: 9 }).length / 1000).toFixed(1)} KB`;
  console.log(`MCP App view (ui://perennial/machine), budget ${BUDGET_BYTES / 1000} KB`);
  row('', 'raw', 'gzip');
  row('page', kb(page), gzip(page));
  row('  script', kb(part('script')), gzip(part('script')));
  row('  style', kb(part('style')), gzip(part('style')));
  console.log(`  ${((Buffer.byteLength(page) / BUDGET_BYTES) * 100).toFixed(0)}% of the budget`);
}
