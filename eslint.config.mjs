import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers' import rules (ARCHITECTURE.md): `vscode` only in the extension, and no layer reaches
 * into one it must not know. Each block lists everything its files may not import, since a later
 * block's `no-restricted-imports` replaces an earlier one's for the same files.
 */
const ALL_LAYERS = ['platform', 'shared', 'kernel', 'engines', 'machines', 'server', 'client', 'mcp', 'cli', 'extension'];
const restrict = (files, { mayImport, typesOf = [], vscode = false }) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: vscode ? [] : [{ name: 'vscode', message: 'vscode may be imported only under src/extension/.' }],
        patterns: [
          ...ALL_LAYERS.filter((layer) => !mayImport.includes(layer)).map((layer) => ({
            regex: `^\\.\\.?/(\\.\\./)*${layer}/`,
            message: `This layer may not import from src/${layer}/${typesOf.includes(layer) ? ' but types' : ''} (see ARCHITECTURE.md).`,
            allowTypeImports: typesOf.includes(layer),
          })),
          ...(mayImport.includes('client') && files.some((f) => f.startsWith('src/') && f !== 'src/client/**')
            ? [{ regex: '/client/(forevervm-client|repl-connection|forevervm-emulation)\\.ts$', message: 'Use the client facade (PerennialClient, HttpClient), not its wire layer.' }]
            : []),
        ],
      },
    ],
  },
});

export default tseslint.config(
  // test/fixtures/builds: real earlier builds, as they were bundled.
  { ignores: ['dist/**', 'node_modules/**', '.data/**', '.cache/**', 'test/fixtures/builds/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly' } },
    rules: {
      // Library code reports through return values and events; stdout may be a protocol (stdio MCP).
      'no-console': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  restrict(['**/*.ts', '**/*.mjs'], { mayImport: ALL_LAYERS }),
  restrict(['src/platform/**', 'src/shared/**'], { mayImport: ['platform', 'shared'] }),
  restrict(['src/engines/**'], { mayImport: ['platform', 'shared', 'kernel', 'engines'] }),
  restrict(['src/machines/**'], { mayImport: ['platform', 'shared', 'engines', 'machines'] }),
  restrict(['src/client/**', 'src/mcp/**'], { mayImport: ['platform', 'shared', 'client', 'mcp'] }),
  // The server implements the client interface in process; it never calls a server itself.
  restrict(['src/server/**'], { mayImport: ['platform', 'shared', 'machines', 'server', 'mcp'], typesOf: ['client'] }),
  restrict(['src/cli/**'], { mayImport: ['platform', 'shared', 'server', 'client', 'mcp', 'cli'] }),
  restrict(['src/extension/**', 'test/e2e/**'], { mayImport: ['platform', 'shared', 'client', 'extension'], vscode: true }),
  {
    // The CLI, benchmarks, build scripts and tests talk to a person on the terminal.
    files: ['src/cli/**', 'bench/**', 'scripts/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
);
