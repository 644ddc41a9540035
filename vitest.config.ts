import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The HTTP end-to-end tests run twice: on embedded storage (SQLite + the data dir's blobs/) in
 * `embedded`, with everything else, and on PostgreSQL + S3 (s3rver) in `postgres-s3`, where
 * test/helpers/origin.ts gives each test origin a fresh database and a fresh bucket. Two attack
 * files of test/security run there too: tiers-attacks, tiers-stream-attacks and hot-bytes-attacks.
 *
 * Left out of `postgres-s3`, with the reason:
 * - cli.test.ts, cli-client.test.ts, cli-keys.test.ts, cli-sync.test.ts, cli-link-variant.test.ts,
 *   docs.test.ts, example-signed-link.test.ts,
 *   edge.test.ts, webhooks-crash.test.ts: spawn their own CLI/origin processes with embedded storage, not startTestOrigin;
 * - multi-origin.test.ts, postgres-concurrency.test.ts, upload-s3.test.ts: choose their storage
 *   themselves (already PostgreSQL and/or S3);
 * - field-order.test.ts: 480 parts of 5 MiB that test the JSON parser, not the store; through
 *   s3rver they would take minutes. Body-first and body-last parts of 5 MiB into S3 are in
 *   upload-s3.test.ts, and every other upload test runs in `postgres-s3`;
 * - s3-auth.test.ts, s3-clients.test.ts, s3-edges.test.ts: check signatures, scopes, what
 *   outside S3 clients send and the edges' purge, which no storage changes (s3-objects and
 *   s3-multipart run on both);
 * - variants.test.ts, variants-fleet.test.ts: image variants are made at the edge from its cache, the
 *   same whatever the origin stores in; once is enough for their transforms.
 */
const e2eElsewhere = [
  'cli', 'cli-client', 'cli-keys', 'cli-sync', 'cli-link-variant', 'docs', 'example-signed-link', 'edge', 'webhooks-crash',
  'multi-origin', 'postgres-concurrency', 'upload-s3', 'field-order', 's3-auth', 's3-clients', 's3-edges',
  'variants', 'variants-fleet',
].map((name) => `test/e2e/${name}.test.ts`);

/**
 * Most test files wait on child processes and sockets far more than they compute, so two run at
 * once even on a two-core machine. Run afterwards, one file at a time:
 * - the browser tests: one Chromium each, watching focus and timing;
 * - test/e2e/edge.test.ts: its origin and three edges are `coffer` processes, so their leases
 *   run on the wall clock (a clock moved by hand reaches only this process), and this process
 *   relays every edge's feed. With another file beside it on two cores they are starved long
 *   enough that an edge lets its 2.4 s lease run out and answers 503 edge_unavailable (beside
 *   field-order.test.ts: 2 runs of 3 failed). The lease rules themselves run on a controlled
 *   clock in test/unit/feed-*.test.ts, in parallel with the rest.
 */
const serial = ['test/browser/**/*.test.ts', 'test/e2e/edge.test.ts'];
const shared = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
  maxWorkers: Math.max(2, Math.min(4, availableParallelism())),
  sequence: { groupOrder: 0 },
};

export default defineConfig({
  test: {
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        test: {
          ...shared,
          name: 'embedded',
          include: ['test/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...serial],
          // One throwaway PostgreSQL for the run, started in the background (test/helpers/postgres.ts).
          globalSetup: ['./test/helpers/postgres-setup.ts'],
        },
      },
      {
        test: {
          ...shared,
          name: 'serial',
          include: serial,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          ...shared,
          name: 'postgres-s3',
          // With the attacks on tiered fill and on files held in memory: their stores' reads are what they attack.
          include: ['test/e2e/**/*.test.ts', 'test/security/tiers-attacks.test.ts', 'test/security/hot-bytes-attacks.test.ts', 'test/security/tiers-stream-attacks.test.ts'],
          exclude: ['**/node_modules/**', ...e2eElsewhere],
          globalSetup: ['./test/helpers/postgres-setup.ts', './test/helpers/s3-setup.ts'],
          env: { COFFER_TEST_METADATA: 'postgres', COFFER_TEST_BLOBS: 's3' },
        },
      },
    ],
  },
});
