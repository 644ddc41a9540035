/**
 * Picks the adapters the configuration names: embedded by default. Each is loaded only
 * when named, so an embedded origin never holds the S3 client or pg in memory (and one on
 * PostgreSQL and S3 never loads better-sqlite3).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore, MetadataStore } from '../core/ports.js';

const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

export async function openMetadataStore(dataDir: string, databaseUrl: string | undefined): Promise<MetadataStore> {
  if (databaseUrl) {
    if (!isPostgresUrl(databaseUrl)) {
      throw new Error('COFFER_DATABASE_URL must be a PostgreSQL URL (postgres://user:password@host:port/database); unset it to use the embedded SQLite store.');
    }
    try {
      const { openPostgresStore } = await import('./metadata/postgres.js');
      return await openPostgresStore(databaseUrl);
    } catch (err) {
      // The URL may hold a password: name the server only.
      let where = 'the server in COFFER_DATABASE_URL';
      try {
        const u = new URL(databaseUrl);
        where = `${u.hostname}${u.port ? ':' + u.port : ''}${u.pathname}`;
      } catch {
        // Not parseable: pg would have said so.
      }
      throw new Error(`Cannot open the PostgreSQL database at ${where}: ${(err as Error).message}`, { cause: err });
    }
  }
  await mkdir(dataDir, { recursive: true });
  const { openSqliteStore } = await import('./metadata/sqlite.js');
  return openSqliteStore(join(dataDir, 'coffer.sqlite'));
}

export async function openBlobStore(dataDir: string, blobStore: string | undefined): Promise<BlobStore> {
  if (blobStore) {
    if (!blobStore.startsWith('s3://')) {
      throw new Error('COFFER_BLOB_STORE must be an s3:// URL (s3://BUCKET?endpoint=…&region=…&force_path_style=true); unset it to keep blobs in the data dir.');
    }
    const { S3BlobStore } = await import('./blobs/s3.js');
    return S3BlobStore.open(blobStore);
  }
  const { FsBlobStore } = await import('./blobs/fs.js');
  return FsBlobStore.open(join(dataDir, 'blobs'));
}
