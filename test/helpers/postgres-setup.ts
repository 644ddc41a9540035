/**
 * vitest globalSetup: one throwaway PostgreSQL for the whole run (see ./postgres.ts).
 *
 * The cluster starts in the background: its URL is provided at once and a test file that needs
 * it waits for it (`createDatabase()`), so runs that never touch PostgreSQL pay nothing for it.
 * Without the server binaries, only the tests that need PostgreSQL fail, saying what to install.
 */
import type { TestProject } from 'vitest/node';
import { launchCluster, type ClusterHandle, type ProvidedPostgres } from './postgres.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.COFFER_TEST_POSTGRES_URL;
  let cluster: ClusterHandle | null = null;
  let provided: ProvidedPostgres;
  if (external) {
    provided = { adminUrl: external };
  } else {
    try {
      cluster = await launchCluster();
      provided = { adminUrl: cluster.adminUrl, dir: cluster.dir };
      cluster.ready.catch(() => {});
    } catch (err) {
      provided = { error: (err as Error).message };
    }
  }
  project.provide('postgres', provided);
  return async () => {
    await cluster?.stop();
  };
}
