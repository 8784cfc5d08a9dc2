import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers' import rules, read from ARCHITECTURE.md's table (its "may import" column), so that
 * the document and the lint cannot disagree: `vscode` only in the extension, and no layer reaches
 * into one it may not. Each block lists everything its files may not import, since a later
 * block's `no-restricted-imports` replaces an earlier one's for the same files.
 */
const LAYERS = Object.fromEntries(
  [...readFileSync(new URL('./ARCHITECTURE.md', import.meta.url), 'utf8').matchAll(/^\| `src\/(\w+)\/` \|.*\| ([^|]*) \|$/gm)].map(([, layer, imports]) => [
    layer,
    imports.trim() === '–' ? [] : imports.split(',').map((name) => name.trim()),
  ]),
);
const ALL_LAYERS = Object.keys(LAYERS);
if (ALL_LAYERS.length !== 16) throw new Error(`ARCHITECTURE.md's layer table names ${ALL_LAYERS.length} layers; eslint.config.mjs expects 16`);
const restrict = (files, { mayImport, vscode = false }) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: vscode ? [] : [{ name: 'vscode', message: 'vscode may be imported only under src/extension/.' }],
        patterns: [
          ...ALL_LAYERS.filter((layer) => !mayImport.includes(layer)).map((layer) => ({
            // The engines' descriptors are plain data every layer reads (src/engines/descriptor.ts).
            regex: `^\\.\\.?/(\\.\\./)*${layer}/${layer === 'engines' ? '(?!descriptors?\\.ts$|\\w+/descriptor\\.ts$)' : ''}`,
            message: `This layer may not import from src/${layer}/ (see ARCHITECTURE.md).`,
          })),
          ...(mayImport.includes('client') && files.some((f) => f.startsWith('src/') && f !== 'src/client/**')
            ? [
                {
                  regex: '/client/(forevervm-client|repl-connection|forevervm-emulation)\\.ts$',
                  message: 'Use the client facade (PerennialClient, HttpClient), not its wire layer.',
                },
              ]
            : []),
        ],
      },
    ],
  },
});
/** A layer's own rule: itself and what the table lets it import. */
const layer = (name, extraFiles = [], options = {}) => restrict([`src/${name}/**`, ...extraFiles], { mayImport: [name, ...LAYERS[name]], ...options });

export default tseslint.config(
  // test/fixtures/builds: real earlier builds, as they were bundled.
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.cache/**', 'test/fixtures/builds/**', 'test/vendor/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      // Library code reports through return values and events; stdout may be a protocol (stdio MCP).
      'no-console': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  restrict(['**/*.ts', '**/*.mjs'], { mayImport: ALL_LAYERS }),
  ...ALL_LAYERS.filter((name) => name !== 'extension').map((name) => layer(name)),
  layer('extension', ['test/e2e/**'], { vscode: true }),
  {
    // The end-to-end suite's chat host is a CommonJS VS Code extension, and the Windows tests'
    // Wine shim a script node.exe preloads with --require: both loaded as they are.
    files: ['test/e2e/*-host/*.cjs', 'test/windows/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', exports: 'writable' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The CLI, benchmarks, build scripts and tests talk to a person on the terminal.
    files: ['src/cli/**', 'bench/**', 'scripts/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
);
