// ESLint (flat config): the recommended rules for JavaScript and TypeScript over the
// extension, the renderer, the build script and the tests.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['out/**', 'node_modules/**', '*.vsix', 'test-results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        console: 'readonly', process: 'readonly', window: 'readonly', document: 'readonly', setTimeout: 'readonly',
        clearTimeout: 'readonly', fetch: 'readonly', __dirname: 'readonly', URL: 'readonly', MessageEvent: 'readonly', getComputedStyle: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'smart'],
    },
  },
);
