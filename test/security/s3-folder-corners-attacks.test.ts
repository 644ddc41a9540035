/**
 * Attacks from outside on this round's S3 corners (docs/s3.md "Keys and folders", contract §12):
 * the file of the empty name (the object `a/`) must never become the key "" at a bucket's top,
 * and DeleteBucket of a bucket whose top holds one says so. Every other way to bring one to a
 * top: a rename and a move in one call, a whitespace name, CopyObject onto `a/`, moving the
 * bucket above, a PutObject of `a/` racing the move of `a`, DeleteObjects mixing `a/` and `a`,
 * odd slashes, and keys confined to a folder doing any of it.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import {
  CopyObjectCommand, DeleteBucketCommand, DeleteObjectsCommand, GetObjectCommand, HeadBucketCommand, ListObjectsV2Command, PutObjectCommand, type S3Client,
} from '@aws-sdk/client-s3';
import { expectS3Error, filesIn, folderAt, makeKey, s3Client } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';
import { jsonClient } from '../kit/index.js';
import { waitFor } from '../kit/poll.js';

const t = useS3Fixture('fx');

const put = (Bucket: string, Key: string, Body: string | PassThrough, s3: S3Client = t.s3, ContentLength?: number) =>
  s3.send(new PutObjectCommand({ Bucket, Key, Body, ...(ContentLength === undefined ? {} : { ContentLength }) }));
const read = async (Bucket: string, Key: string) => (await t.s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();
const keysOf = async (Bucket: string) => ((await t.s3.send(new ListObjectsV2Command({ Bucket }))).Contents ?? []).map((c) => c.Key);
const move = (folder_id: string, parent_id: string | null, extra: Record<string, unknown> = {}) => t.o.post('/collections/folder/update', { folder_id, parent_id, ...extra });
const emptyNamed = async (folderId: string) => (await filesIn(t.o, folderId)).filter((f) => f.name === '');
const unique = (tag: string) => `${tag}-${Math.random().toString(16).slice(2, 10)}`;
const codeOf = (r: { status: number; body: any }) => [r.status, r.body.error?.code, r.body.error?.details?.field];

describe('other ways to bring the empty name to a top', () => {
  test('a rename and a move to the top in one call, or a new name of white space only, are refused; a name given with the move lets it go', async () => {
    const b = await t.newBucket();
    await put(b, 'a/', 'A');
    const a = await folderAt(t.o, `${b}/a`);
    const [file] = await emptyNamed(a);
    const bucketId = await folderAt(t.o, b);
    // The folder: renamed and moved in one call is still a move to the top.
    expect(codeOf(await move(a, null, { name: unique('renamed') }))).toEqual([400, 'invalid_name', 'parent_id']);
    // The file itself: a name of white space is trimmed to nothing, refused wherever it goes.
    for (const name of ['', ' ', '\t', '\u3000']) {
      const r = await t.o.post('/collections/file/update', { file_id: file!.file_id, name, folder_id: bucketId });
      expect(r.status, JSON.stringify(name)).toBe(400);
      expect(r.body.error?.code).toBe('invalid_name');
    }
    expect(await keysOf(b)).toEqual(['a/']);
    // A real name with the move: an ordinary file at the top.
    expect((await t.o.post('/collections/file/update', { file_id: file!.file_id, name: 'named.txt', folder_id: bucketId })).status).toBe(200);
    expect([await keysOf(b), await read(b, 'named.txt')]).toEqual([['named.txt'], 'A']);
  });

  test('CopyObject onto "c/" makes the file of the empty name in "c", which then cannot lift "c"; "/" and "c//" as targets are refused', async () => {
    const b = await t.newBucket(['src.txt']);
    await t.s3.send(new CopyObjectCommand({ Bucket: b, Key: 'c/', CopySource: `${b}/src.txt` }));
    const c = await folderAt(t.o, `${b}/c`);
    expect(await emptyNamed(c)).toHaveLength(1);
    expect(codeOf(await move(c, null))).toEqual([400, 'invalid_name', 'parent_id']);
    for (const Key of ['/', 'c//', '//']) {
      await expectS3Error(t.s3.send(new CopyObjectCommand({ Bucket: b, Key, CopySource: `${b}/src.txt` })), 400, 'InvalidArgument');
    }
    expect(await keysOf(b)).toEqual(['c/', 'src.txt']);
  });

  test('a bucket moved under a folder and back: its "a/" follows as "<bucket>/a/", and "a" still cannot be lifted out of it', async () => {
    const outer = await t.newBucket();
    const inner = await t.newBucket();
    await put(inner, 'a/', 'slash');
    const innerId = await folderAt(t.o, inner);
    expect((await move(innerId, await folderAt(t.o, outer))).status).toBe(200);
    expect(await keysOf(outer)).toEqual([`${inner}/a/`]);
    const a = await folderAt(t.o, `${outer}/${inner}/a`);
    expect(codeOf(await move(a, null))).toEqual([400, 'invalid_name', 'parent_id']);
    // The bucket back to the top: it holds "a/" one level down, which keeps its key.
    expect((await move(innerId, null)).status).toBe(200);
    expect([await keysOf(inner), await read(inner, 'a/')]).toEqual([['a/'], 'slash']);
  });

  test('a file of the empty name hidden at a top comes back to sight when its bucket is moved under another', async () => {
    const b = await t.newBucket();
    const name = unique('hid');
    // Made the way the documents allow: a PUT of "<name>/" whose body is still coming when "<name>" becomes a bucket.
    const body = new PassThrough();
    const answer = put(b, `${name}/`, body, t.s3, 10).then(() => 'ok', (e: { name: string }) => e.name);
    body.write('12345');
    let folderId = '';
    await waitFor(async () => {
      folderId = await folderAt(t.o, `${b}/${name}`).catch(() => '');
      return folderId !== '';
    }, { what: 'the folder the PUT made' });
    const lifted = await move(folderId, null);
    body.end('67890');
    const outcome = await answer;
    if (lifted.status !== 200) {
      // The PUT completed first: the move is refused, the object stays where it was sent.
      expect(codeOf(lifted)).toEqual([400, 'invalid_name', 'parent_id']);
      expect(await read(b, `${name}/`)).toBe('1234567890');
      return;
    }
    const hidden = await emptyNamed(folderId);
    // Either the write is refused (nothing kept) or it lands hidden; never under the key "".
    expect(await keysOf(name)).toEqual([]);
    if (hidden.length === 0) {
      expect(outcome).not.toBe('ok');
      return;
    }
    const refused = await expectS3Error(t.s3.send(new DeleteBucketCommand({ Bucket: name })), 409, 'BucketNotEmpty');
    expect(refused.message).toContain(hidden[0]!.file_id);
    // Moved under another bucket, "<name>" is a folder again and its object "<name>/" has a key.
    expect((await move(folderId, await folderAt(t.o, b))).status).toBe(200);
    expect(await read(b, `${name}/`)).toBe('1234567890');
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: name })), 404, 'NotFound');
  });
});

describe('the lift racing a move of the file', () => {
  test('a file of the empty name moved into "a" while "a" is moved to the top, twenty times at once: never both, and no bucket ever holds it at its top', async () => {
    const b = await t.newBucket();
    const bucketId = await folderAt(t.o, b);
    for (let i = 0; i < 20; i++) {
      const name = unique(`race${i}`);
      await put(b, `${name}-src/`, `bytes ${i}`);
      await put(b, `${name}/keep`, 'k');
      const src = await folderAt(t.o, `${b}/${name}-src`);
      const a = await folderAt(t.o, `${b}/${name}`);
      const [file] = await emptyNamed(src);
      const [fileMove, lift] = await Promise.all([
        t.o.post('/collections/file/update', { file_id: file!.file_id, folder_id: a }),
        move(a, null),
      ]);
      expect(fileMove.status === 200 && lift.status === 200, `round ${i}: both moves succeeded`).toBe(false);
      expect(fileMove.status === 200 || lift.status === 200, `round ${i}: one of them goes through`).toBe(true);
      if (lift.status === 200) {
        expect(await emptyNamed(a)).toEqual([]);
        expect(await keysOf(name)).toEqual(['keep']);
        expect((await move(a, bucketId)).status).toBe(200);
      } else {
        expect(codeOf(lift)).toEqual([400, 'invalid_name', 'parent_id']);
        expect(await read(b, `${name}/`)).toBe(`bytes ${i}`);
      }
    }
  });
});

describe('DeleteBucket racing a write', () => {
  test('a PUT of "d/x" or "d/" held open while DeleteBucket is asked: either the bucket stays and the object is whole, or the bucket is gone and the PUT is NoSuchBucket, leaving nothing', async () => {
    for (const Key of ['d/x', 'd/']) {
      const b = await t.newBucket();
      const body = new PassThrough();
      const answer = put(b, Key, body, t.s3, 10).then(() => 'ok', (e: { name: string }) => e.name);
      body.write('12345');
      await waitFor(async () => (await folderAt(t.o, `${b}/d`).then(() => true, () => false)), { what: 'the folder the PUT made' });
      const deleted = await t.s3.send(new DeleteBucketCommand({ Bucket: b })).then(() => 'ok', (e: { name: string }) => e.name);
      body.end('67890');
      const outcome = await answer;
      if (deleted === 'ok') {
        expect(outcome, Key).toBe('NoSuchBucket');
        await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: b })), 404, 'NotFound');
        expect((await t.o.post('/collections/list', { folder_id: null, limit: 1000 })).body.folders.map((f: { name: string }) => f.name)).not.toContain(b);
      } else {
        expect([deleted, outcome], Key).toEqual(['BucketNotEmpty', 'ok']);
        expect([await keysOf(b), await read(b, Key)]).toEqual([[Key], '1234567890']);
      }
    }
  });
});

describe('DeleteObjects and odd slashes', () => {
  test('DeleteObjects of "a/", "a", "a/x" and "a//" in one request: the three objects go, "a//" is an error of its own, the folder "a" goes, and DeleteBucket then succeeds', async () => {
    const b = await t.newBucket(['a', 'a/x']);
    await put(b, 'a/', 'slash');
    expect(await keysOf(b)).toEqual(['a', 'a/', 'a/x']);
    const out = await t.s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'a/' }, { Key: 'a' }, { Key: 'a/x' }, { Key: 'a//' }] } }));
    expect((out.Deleted ?? []).map((d) => d.Key).sort()).toEqual(['a', 'a/', 'a/x']);
    expect((out.Errors ?? []).map((e) => [e.Key, e.Code])).toEqual([['a//', 'InvalidArgument']]);
    expect(await keysOf(b)).toEqual([]);
    await t.s3.send(new DeleteBucketCommand({ Bucket: b }));
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: b })), 404, 'NotFound');
  });

  test('look-alike slashes (U+2215, U+FF0F, U+2044) and a trailing "%2F" name ordinary files at the top, never folders', async () => {
    const b = await t.newBucket();
    const keys = ['u\u2215', 'u\uff0f', 'u\u2044', 'u%2F'];
    for (const Key of keys) await put(b, Key, Key);
    expect((await keysOf(b))!.sort()).toEqual([...keys].sort());
    const top = await t.o.post('/collections/list', { folder_id: await folderAt(t.o, b), limit: 1000 });
    expect([top.body.folders.length, top.body.files.length]).toEqual([0, 4]);
    for (const Key of keys) expect(await read(b, Key)).toBe(Key);
  });
});

describe('keys confined to a folder', () => {
  test('a confined key cannot lift a folder holding "a/" out of its reach, nor move the file to the root, and learns nothing outside', async () => {
    const b = await t.newBucket();
    await put(b, 'team/a/', 'inside');
    const team = await folderAt(t.o, `${b}/team`);
    const a = await folderAt(t.o, `${b}/team/a`);
    const [file] = await emptyNamed(a);
    const key = await makeKey(t.o, ['read', 'write'], team);
    const json = jsonClient(t.o.url, key.secret);
    const lifted = await json.post('/collections/folder/update', { folder_id: a, parent_id: null });
    expect([403, 404]).toContain(lifted.status);
    const toRoot = await json.post('/collections/file/update', { file_id: file!.file_id, folder_id: null });
    expect([400, 403, 404]).toContain(toRoot.status);
    // Into its own folder (directly under the bucket's top only for the unconfined): allowed, a key "team/" then.
    const inTeam = await json.post('/collections/file/update', { file_id: file!.file_id, folder_id: team });
    expect(inTeam.status).toBe(200);
    // Nothing outside the key's folder is named in any answer.
    for (const r of [lifted, toRoot]) expect(JSON.stringify(r.body)).not.toContain(await folderAt(t.o, b));
    expect(await keysOf(b)).toEqual(['team/']);
    const confined = s3Client(t.url, key).client;
    try {
      // Over S3 it cannot delete the bucket, nor its own folder through its marker.
      await expectS3Error(confined.send(new DeleteBucketCommand({ Bucket: b })), 403, 'AccessDenied');
      await confined.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: 'team/' }] } }));
      expect((await t.o.post('/collections/folder/get', { folder_id: team })).status).toBe(200);
      expect(await keysOf(b)).toEqual([]);
    } finally {
      confined.destroy();
    }
  });
});
