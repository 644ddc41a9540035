/** Picks the adapters the configuration names: embedded by default. */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore, MetadataStore } from '../core/ports.js';
import { FsBlobStore } from './blobs/fs.js';
import { openSqliteStore } from './metadata/sqlite.js';

export async function openMetadataStore(dataDir: string, databaseUrl: string | undefined): Promise<MetadataStore> {
  if (databaseUrl) {
    throw new Error('COFFER_DATABASE_URL is set, but this build keeps metadata in SQLite only; unset it to use the embedded store.');
  }
  await mkdir(dataDir, { recursive: true });
  return openSqliteStore(join(dataDir, 'coffer.sqlite'));
}

export async function openBlobStore(dataDir: string, blobStore: string | undefined): Promise<BlobStore> {
  if (blobStore) {
    throw new Error('COFFER_BLOB_STORE is set, but this build keeps blobs on disk only; unset it to use the embedded store.');
  }
  return FsBlobStore.open(join(dataDir, 'blobs'));
}
