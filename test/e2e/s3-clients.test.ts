/**
 * Real S3 clients, unchanged, from Debian's packages, against Coffer's S3 interface (contract
 * §12): aws (cp up and down in parts, sync, ls, rm --recursive, presign), rclone (sync, check,
 * copy and delete with --checksum), s3cmd (put, get, ls, del) and a boto3 script (list, put,
 * copy, get with a Range, delete). What they leave is checked through the programmatic interface
 * or the SDK.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { HeadObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { filesIn, folderAt } from '../helpers/s3-api.js';
import { PYTHON, RCLONE, S3CMD } from '../helpers/s3-clients.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';
import { sha256 } from '../kit/index.js';

const MiB = 1024 * 1024;
const BOTO3_SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), '../helpers/boto3-check.py');

const t = useS3Fixture('c');
const md5 = (b: Buffer | string) => createHash('md5').update(b).digest('hex');
async function keysIn(Bucket: string, Prefix?: string): Promise<string[]> {
  return ((await t.s3.send(new ListObjectsV2Command({ Bucket, Prefix }))).Contents ?? []).map((x) => x.Key!);
}
/** A directory of small files, some in a sub-directory. */
async function tree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
}
const aws = t.aws;

describe('aws (awscli)', () => {
  test('s3 cp up and down in parts, s3 sync, s3 ls, s3 presign and s3 rm --recursive', async () => {
    const b = await t.newBucket();
    const big = randomBytes(11 * MiB + 77);
    await writeFile(join(t.home, 'big.bin'), big);
    await aws('s3', 'cp', join(t.home, 'big.bin'), `s3://${b}/media/big.bin`);
    // Three parts of at most 5 MiB: S3's multipart ETag; Coffer's SHA-256 of the whole.
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'media/big.bin' }))).ETag).toMatch(/^"[0-9a-f]{32}-3"$/);
    const [file] = await filesIn(t.o, await folderAt(t.o, `${b}/media`));
    expect((await t.o.post('/collections/file/get', { file_id: file!.file_id })).body).toMatchObject({ name: 'big.bin', size: big.length, sha256: sha256(big) });
    await aws('s3', 'cp', `s3://${b}/media/big.bin`, join(t.home, 'down.bin'));
    expect(sha256(await readFile(join(t.home, 'down.bin')))).toBe(sha256(big));

    const local = join(t.home, 'site');
    await tree(local, { 'index.html': '<h1>hi</h1>', 'css/main.css': 'body{}', 'img/a b.txt': 'spaced' });
    await aws('s3', 'sync', local, `s3://${b}/site/`);
    const listing = await aws('s3', 'ls', `s3://${b}/site/`, '--recursive');
    expect(listing.trim().split('\n').map((l) => l.trim().split(/\s+/).slice(2))).toEqual([['6', 'site/css/main.css'], ['6', 'site/img/a', 'b.txt'], ['11', 'site/index.html']]);

    const url = (await aws('s3', 'presign', `s3://${b}/site/index.html`, '--expires-in', '300')).trim();
    const got = await fetch(url);
    expect([got.status, await got.text()]).toEqual([200, '<h1>hi</h1>']);

    await aws('s3', 'rm', `s3://${b}/site`, '--recursive');
    expect(await keysIn(b)).toEqual(['media/big.bin']);
    // Each aws command starts a Python interpreter: seconds apiece on a busy machine.
  }, 150_000);
});

describe('rclone', () => {
  test('sync, check, copy and delete with --checksum', async () => {
    const b = await t.newBucket();
    const local = join(t.home, 'rc-src');
    await tree(local, { 'one.txt': 'one', 'dir/two.txt': 'two two', 'dir/deeper/three.bin': randomBytes(70_000).toString('base64') });
    // rclone's own settings, not awscli's: no CA bundle for a plain-HTTP endpoint.
    const rclone = (...args: string[]) => t.c.ok(RCLONE, ['--checksum', '--retries', '1', '--low-level-retries', '1', ...args]);
    await rclone('sync', local, `coffer:${b}/backup`);
    expect(await keysIn(b)).toEqual(['backup/dir/deeper/three.bin', 'backup/dir/two.txt', 'backup/one.txt']);
    await rclone('check', local, `coffer:${b}/backup`);
    await rm(join(local, 'one.txt'));
    await writeFile(join(local, 'dir/two.txt'), 'two, changed');
    await rclone('sync', local, `coffer:${b}/backup`);
    await rclone('check', local, `coffer:${b}/backup`);
    expect(await keysIn(b)).toEqual(['backup/dir/deeper/three.bin', 'backup/dir/two.txt']);
    const copy = join(t.home, 'rc-copy');
    await rclone('copy', `coffer:${b}/backup/dir`, copy);
    expect(await readFile(join(copy, 'two.txt'), 'utf8')).toBe('two, changed');
    expect(await readFile(join(copy, 'deeper/three.bin'))).toEqual(await readFile(join(local, 'dir/deeper/three.bin')));
    await rclone('delete', `coffer:${b}/backup/dir/deeper`);
    expect(await keysIn(b)).toEqual(['backup/dir/two.txt']);
  }, 120_000);
});

describe('s3cmd', () => {
  test('put, ls, get and del', async () => {
    const b = await t.newBucket();
    const s3cmd = (...args: string[]) => t.c.ok(S3CMD, ['--no-progress', ...args]);
    await writeFile(join(t.home, 'notes.txt'), 'notes from s3cmd');
    await s3cmd('put', join(t.home, 'notes.txt'), `s3://${b}/docs/notes.txt`);
    expect((await t.s3.send(new HeadObjectCommand({ Bucket: b, Key: 'docs/notes.txt' }))).ETag).toBe(`"${md5('notes from s3cmd')}"`);
    expect(await s3cmd('ls', `s3://${b}/`)).toMatch(/DIR\s+s3:\/\/[^/]+\/docs\//);
    expect(await s3cmd('ls', `s3://${b}/docs/`)).toMatch(/\s16\s+s3:\/\/[^/]+\/docs\/notes\.txt/);
    await s3cmd('get', `s3://${b}/docs/notes.txt`, join(t.home, 'notes-back.txt'));
    expect(await readFile(join(t.home, 'notes-back.txt'), 'utf8')).toBe('notes from s3cmd');
    await s3cmd('del', `s3://${b}/docs/notes.txt`);
    expect(await keysIn(b)).toEqual([]);
  });
});

describe('boto3', () => {
  test('a script lists, puts, copies, gets with a Range and deletes', async () => {
    const b = await t.newBucket();
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'keep.txt', Body: 'kept' }));
    const seen = JSON.parse(await t.c.ok(PYTHON, [BOTO3_SCRIPT, b]));
    expect(seen.buckets).toContain(b);
    expect(seen.put_etag).toBe(seen.md5);
    expect(seen.listed).toEqual([['py/copy.txt', 26], ['py/hello.txt', 26]]);
    expect(seen.range).toEqual([206, 'bytes 6-12/26', 'was her']);
    expect(seen.metadata).toEqual({ lang: 'python' });
    expect(seen.after_delete).toBe(0);
    expect(seen.missing).toBe('NoSuchKey');
    expect(await keysIn(b)).toEqual(['keep.txt']);
  });
});
