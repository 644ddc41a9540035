import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One throwaway PostgreSQL for the run, started in the background (test/helpers/postgres.ts).
    globalSetup: ['./test/helpers/postgres-setup.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
