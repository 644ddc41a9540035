/**
 * `coffer sync --delete` compares a directory with a folder: the folder's own S3 object (the
 * file with the empty name, a key ending in "/") has no local counterpart and is never deleted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planSync } from '../../src/cli/sync-plan.js';
import type { CofferClient, FileRecord, ListResponse } from '../../src/sdk/index.js';

const record = (id: string, name: string): FileRecord => ({
  file_id: id, name, folder_id: 'F', visibility: 'Public', size: 3, file_type: 'other', content_type: 'application/octet-stream',
  status: 'ready', sha256: 'x'.repeat(64), created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z',
} as unknown as FileRecord);

const clientListing = (files: FileRecord[]) => ({
  async *listPages() {
    yield { folder: null, breadcrumbs: [], folders: [], files, next_cursor: null } as unknown as ListResponse;
  },
}) as unknown as CofferClient;

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('sync --delete and the folder object', () => {
  it('deletes a file gone locally but leaves the empty-named object alone', async () => {
    dir = await mkdtemp(join(tmpdir(), 'coffer-sync-plan-'));
    await writeFile(join(dir, 'kept.txt'), 'abc');
    const files = [record('folder-object', ''), record('gone', 'gone.txt')];
    const plan = await planSync(dir, 'F', { client: clientListing(files), delete: true, dryRun: true, visibility: 'Public' });
    expect(plan.deletes).toEqual([{ kind: 'file', id: 'gone', rel: 'gone.txt' }]);
    expect(plan.uploads.map((u) => u.file.rel)).toEqual(['kept.txt']);
  });
});
