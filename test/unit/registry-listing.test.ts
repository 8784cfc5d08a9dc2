// The MCP Registry listing: server.json validates against the registry's published schema
// (vendored in test/fixtures/mcp-registry), and names this package as npm and the CLI know it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { VERSION } from '../../src/shared/version.ts';

const read = (path: string) => JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'));
const schema = read('test/fixtures/mcp-registry/server.schema.2025-12-11.json');
const server = read('server.json');
const pkg = read('package.json');

/** The registry's validator: its schema is draft-07, with `example` annotations ajv does not know. */
function validator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

describe('the MCP Registry listing (server.json)', () => {
  it('validates against the registry schema it names', () => {
    assert.equal(server.$schema, schema.$id);
    const validate = validator();
    assert.ok(validate(server), JSON.stringify(validate.errors, null, 2));
  });

  it('is checked for real: the schema refuses what the registry refuses', () => {
    const validate = validator();
    assert.equal(validate({ ...server, name: 'perennial' }), false, 'a name without its namespace');
    assert.equal(validate({ ...server, description: 'x'.repeat(101) }), false, 'a description past 100 characters');
    assert.equal(validate({ ...server, packages: [{ ...server.packages[0], version: 'latest' }] }), false, 'a package at "latest"');
  });

  it('names this package, its version and how it runs', () => {
    assert.equal(pkg.mcpName, server.name, 'npm proves ownership with mcpName');
    assert.equal(server.version, pkg.version);
    assert.equal(VERSION, pkg.version);
    const [npm] = server.packages;
    assert.equal(server.packages.length, 1);
    assert.deepEqual([npm.registryType, npm.identifier, npm.version, npm.transport.type], ['npm', pkg.name, pkg.version, 'stdio']);
    assert.deepEqual(Object.keys(pkg.bin), ['perennial'], "npx runs the package's only binary");
    assert.equal(npm.packageArguments[0].value, 'mcp');
    for (const variable of npm.environmentVariables) assert.ok(variable.description.length > 20, `${variable.name} is described`);
  });
});
