// @ts-check
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'data/',
      'web/dist/',
      'packages/*/dist/',
      // Generated declarations and constants (`npm run client:generate`), checked against the generator instead.
      'packages/client/src/generated/',
      '.dependency-cruiser.cjs',
      'eslint.config.js',
    ],
  },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] }] },
      ],
      // Fastify handlers are async by contract even when they have nothing to await.
      '@typescript-eslint/require-await': 'off',
      // Services are closures over their dependencies and never use `this`, so passing a method is safe.
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object and a union (erasableSyntaxOnly).' },
        {
          // V8 allocates a function literal assigned to a property straight into the old generation
          // (its parser takes it for a method being installed), so one made per request keeps that
          // request's objects alive through the next scavenge: src/lib/bounded-read.ts has the story.
          selector: 'AssignmentExpression[left.type="MemberExpression"][right.type=/^(ArrowFunctionExpression|FunctionExpression)$/]',
          message: 'Name the function first (`const onX = () => …; target.x = onX`): V8 pretenures a function literal assigned to a property.',
        },
      ],
    },
  },
  {
    // TanStack Router's guards throw its redirect object by design (`throw redirect({...})`).
    files: ['web/**/*.tsx', 'web/**/*.ts'],
    rules: {
      '@typescript-eslint/only-throw-error': ['error', { allow: [{ from: 'package', package: '@tanstack/router-core', name: 'Redirect' }] }],
    },
  },
  {
    // A package's build script is plain JavaScript (it runs on the Node of whoever packs it, 18 or
    // later), outside the TypeScript project: linted without type information.
    files: ['packages/*/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Configuration enters once, in main.ts (loadConfig), and travels as an argument; the standalone
    // sandbox's entry reads its own, and the start's type-stripping cache its one variable (it runs
    // before anything else is loaded). Tests, benches and scripts set up environments of their own.
    files: ['src/**/*.ts', 'src/**/*.js'],
    ignores: ['src/main.ts', 'src/provider/sandbox/main.ts', 'src/strip-types-cache.js', 'src/**/*.test.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Only main.ts reads the environment: take the value from Config.' }],
    },
  },
  {
    files: ['test/**/*.ts', 'src/**/*.test.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
