/**
 * vitest globalSetup of the `postgres-s3` project: one s3rver (./s3.ts) for the run; each test
 * origin started with COFFER_TEST_BLOBS=s3 gets a fresh bucket of its own on it (./origin.ts).
 */
import type { TestProject } from 'vitest/node';
import { startS3, type TestS3 } from './s3.js';

export type ProvidedS3 = { endpoint: string } | { error: string };

declare module 'vitest' {
  export interface ProvidedContext {
    s3: ProvidedS3;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let s3: TestS3 | null = null;
  try {
    s3 = await startS3();
    project.provide('s3', { endpoint: s3.endpoint });
  } catch (err) {
    project.provide('s3', { error: `The test S3 (s3rver) did not start: ${(err as Error).message}` });
  }
  return async () => {
    await s3?.stop();
  };
}
