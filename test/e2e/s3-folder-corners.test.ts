/**
 * The file of the empty name (S3's object `a/`, docs/s3.md "Keys and folders") never becomes the
 * key "": a folder directly holding one is not moved to the top (it would be a bucket whose
 * object `a/` has no key), as such a file is not moved there itself; a folder holding one only
 * deeper, or a bucket moved under a folder, moves and keeps every key reachable. Where the
 * state exists anyway (an upload completed after its folder became a bucket), the bucket lists
 * empty and DeleteBucket says what is there and what to do, deleting nothing unseen.
 */
import { describe, expect, test } from 'vitest';
import {
  CompleteMultipartUploadCommand, CreateBucketCommand, CreateMultipartUploadCommand, DeleteBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand,
  ListObjectsV2Command, PutObjectCommand, UploadPartCommand,
} from '@aws-sdk/client-s3';
import { expectS3Error, filesIn, folderAt } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const t = useS3Fixture('fk');

const put = (Bucket: string, Key: string, Body: string) => t.s3.send(new PutObjectCommand({ Bucket, Key, Body }));
const read = async (Bucket: string, Key: string) => (await t.s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToString();
const keysOf = async (Bucket: string) => ((await t.s3.send(new ListObjectsV2Command({ Bucket }))).Contents ?? []).map((c) => c.Key);
const move = (folder_id: string, parent_id: string | null) => t.o.post('/collections/folder/update', { folder_id, parent_id });
const unique = (tag: string) => `${tag}-${Math.random().toString(16).slice(2, 10)}`;

describe('a folder holding the object "<name>/" moved to the top', () => {
  test('folder/update parent_id null is refused (400 invalid_name, field parent_id, naming the file); renamed, the file moves along and the bucket lists it', async () => {
    const b = await t.newBucket();
    const name = unique('lift');
    await put(b, `${name}/`, 'own bytes');
    await put(b, `${name}/kept.txt`, 'kept');
    const lift = await folderAt(t.o, `${b}/${name}`);
    const [own] = (await filesIn(t.o, lift)).filter((f) => f.name === '');
    const refused = await move(lift, null);
    expect([refused.status, refused.body.error?.code, refused.body.error?.details?.field, refused.body.error?.details?.file_id]).toEqual([400, 'invalid_name', 'parent_id', own!.file_id]);
    expect(refused.body.error.message).toContain(`"${name}/"`);
    // Nothing moved: the keys read as before, and no bucket of that name exists.
    expect([await read(b, `${name}/`), await read(b, `${name}/kept.txt`)]).toEqual(['own bytes', 'kept']);
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: name })), 404, 'NotFound');
    // A name taken at the top is a conflict, answered before the field rule (contract §2's order).
    await t.s3.send(new CreateBucketCommand({ Bucket: name }));
    expect((await move(lift, null)).body.error?.code).toBe('folder_exists');
    await t.s3.send(new DeleteBucketCommand({ Bucket: name }));
    // Renamed, it is an ordinary file and the folder moves.
    expect((await t.o.post('/collections/file/update', { file_id: own!.file_id, name: 'own.txt' })).status).toBe(200);
    expect((await move(lift, null)).status).toBe(200);
    expect(await keysOf(name)).toEqual(['kept.txt', 'own.txt']);
    for (const Key of ['kept.txt', 'own.txt']) await t.s3.send(new DeleteObjectCommand({ Bucket: name, Key }));
    await t.s3.send(new DeleteBucketCommand({ Bucket: name }));
  });

  test('a folder holding "<name>/" only deeper moves to the top: its object is the key "sub/" there; a bucket moved under a folder keeps its "a/" as "<bucket>/a/"', async () => {
    const b = await t.newBucket();
    const name = unique('deep');
    await put(b, `${name}/sub/`, 'deeper');
    expect((await move(await folderAt(t.o, `${b}/${name}`), null)).status).toBe(200);
    expect([await keysOf(name), await read(name, 'sub/')]).toEqual([['sub/'], 'deeper']);
    // The reverse: the bucket moved under a folder of another bucket.
    const inner = await t.newBucket(['a/x']);
    await put(inner, 'a/', 'slash');
    expect((await move(await folderAt(t.o, inner), await folderAt(t.o, b))).status).toBe(200);
    expect(await keysOf(b)).toEqual([`${inner}/a/`, `${inner}/a/x`]);
    expect(await read(b, `${inner}/a/`)).toBe('slash');
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: inner })), 404, 'NotFound');
  });
});

describe('a bucket whose top holds a file of the empty name anyway', () => {
  test('a multipart "<name>/" completed after its folder became a bucket: the bucket lists empty; DeleteBucket is 409 BucketNotEmpty saying why; renamed, the file lists and the bucket empties', async () => {
    const b = await t.newBucket();
    const name = unique('late');
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: `${name}/` }));
    const part = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: `${name}/`, UploadId, PartNumber: 1, Body: 'late bytes' }));
    const folderId = await folderAt(t.o, `${b}/${name}`);
    // No object "<name>/" is there yet (an open upload is none), so the move is allowed.
    expect((await move(folderId, null)).status).toBe(200);
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: `${name}/`, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    const [hidden] = (await filesIn(t.o, folderId)).filter((f) => f.name === '');
    expect(hidden).toBeDefined();
    // An empty folder beside it (a directory marker) changes nothing: folders alone do not count.
    await put(name, 'marker/', '');
    expect(await keysOf(name)).toEqual([]);
    const refused = await expectS3Error(t.s3.send(new DeleteBucketCommand({ Bucket: name })), 409, 'BucketNotEmpty');
    expect(refused.message).toContain('empty name');
    expect(refused.message).toContain(hidden!.file_id);
    // The programmatic interface: a plain delete says the folder is not empty; the file is still there.
    const plain = await t.o.post('/collections/folder/delete', { folder_id: folderId });
    expect([plain.status, plain.body.error?.code]).toEqual([409, 'folder_not_empty']);
    expect((await t.o.post('/collections/file/update', { file_id: hidden!.file_id, name: 'found.txt' })).status).toBe(200);
    expect([await keysOf(name), await read(name, 'found.txt')]).toEqual([['found.txt'], 'late bytes']);
    await t.s3.send(new DeleteObjectCommand({ Bucket: name, Key: 'found.txt' }));
    await t.s3.send(new DeleteBucketCommand({ Bucket: name }));
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: name })), 404, 'NotFound');
  });

  test('beside a listed object the answer is S3\'s own; a recursive folder delete takes the hidden file with the rest', async () => {
    const b = await t.newBucket();
    const name = unique('both');
    const { UploadId } = await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: `${name}/` }));
    const part = await t.s3.send(new UploadPartCommand({ Bucket: b, Key: `${name}/`, UploadId, PartNumber: 1, Body: 'late' }));
    await put(b, `${name}/seen.txt`, 'seen');
    const folderId = await folderAt(t.o, `${b}/${name}`);
    expect((await move(folderId, null)).status).toBe(200);
    await t.s3.send(new CompleteMultipartUploadCommand({ Bucket: b, Key: `${name}/`, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    const refused = await expectS3Error(t.s3.send(new DeleteBucketCommand({ Bucket: name })), 409, 'BucketNotEmpty');
    expect(refused.message).toBe('The bucket you tried to delete is not empty.');
    const deleted = await t.o.post('/collections/folder/delete', { folder_id: folderId, recursive: true });
    expect([deleted.status, deleted.body.deleted_files]).toEqual([200, 2]);
    await expectS3Error(t.s3.send(new HeadBucketCommand({ Bucket: name })), 404, 'NotFound');
  });
});
