/**
 * Keys ending in "/" (docs/s3.md, "Keys and folders"): with bytes, `a/` is an object of its own
 * beside the folder `a` and what is in it (the file of the empty name in that folder), and every
 * operation round-trips it exactly: PutObject, GetObject, HeadObject, ListObjects (v1, v2, with
 * and without the delimiter), ListObjectVersions, CopyObject both ways, multipart, DeleteObject
 * and DeleteObjects. With no bytes it is the folder alone (a directory marker), as consoles and
 * rclone make folders; an empty PUT over an object `a/` with bytes replaces it with an empty one.
 * The programmatic interface shows the object as the file of the empty name in `a`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { expectS3Error, filesIn, folderAt, makeKey, s3Client } from '../helpers/s3-api.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const t = useS3Fixture('f');

const keysOf = 'def keys(**kw):\n    return [o["Key"] for o in s3.list_objects_v2(Bucket=b, **kw).get("Contents", [])]';
const prefixesOf = 'def prefixes(**kw):\n    return [p["Prefix"] for p in s3.list_objects_v2(Bucket=b, **kw).get("CommonPrefixes", [])]';
const read = 'def read(k):\n    return s3.get_object(Bucket=b, Key=k)["Body"].read().decode()';

describe('an object "a/" beside the folder "a"', () => {
  test('boto3: put, get, head, every listing, copies both ways, multipart and deletes round-trip "a/" exactly; "a" and "a/x" stay as they are', async () => {
    const b = await t.newBucket();
    const seen = await t.boto3([
      keysOf, prefixesOf, read,
      's3.put_object(Bucket=b, Key="a/", Body=b"slash bytes", ContentType="text/plain")',
      's3.put_object(Bucket=b, Key="a/x", Body=b"inside")',
      's3.put_object(Bucket=b, Key="a", Body=b"file a")',
      'out = {"get": read("a/")}',
      'h = s3.head_object(Bucket=b, Key="a/")',
      'out["head"] = [h["ContentLength"], h["ContentType"]]',
      'out["all"] = [[o["Key"], o["Size"]] for o in s3.list_objects_v2(Bucket=b)["Contents"]]',
      'out["top"] = [keys(Delimiter="/"), prefixes(Delimiter="/")]',
      'out["inside"] = [keys(Prefix="a/", Delimiter="/"), keys(Prefix="a/")]',
      'out["v1"] = [o["Key"] for o in s3.list_objects(Bucket=b, Prefix="a")["Contents"]]',
      'out["versions"] = [v["Key"] for v in s3.list_object_versions(Bucket=b).get("Versions", [])]',
      'paged, token = [], None',
      'while True:',
      '    page = s3.list_objects_v2(Bucket=b, MaxKeys=1, **({"ContinuationToken": token} if token else {}))',
      '    paged += [o["Key"] for o in page.get("Contents", [])]',
      '    if not page["IsTruncated"]: break',
      '    token = page["NextContinuationToken"]',
      'out["paged"] = paged',
      'out["after a/"] = keys(StartAfter="a/")',
      's3.copy_object(Bucket=b, Key="c/", CopySource={"Bucket": b, "Key": "a/"})',
      's3.copy_object(Bucket=b, Key="plain.txt", CopySource={"Bucket": b, "Key": "a/"})',
      's3.copy_object(Bucket=b, Key="d/", CopySource={"Bucket": b, "Key": "a/x"})',
      'out["copies"] = [read("c/"), read("plain.txt"), read("d/")]',
      'up = s3.create_multipart_upload(Bucket=b, Key="m/")["UploadId"]',
      'out["uploads"] = [u["Key"] for u in s3.list_multipart_uploads(Bucket=b).get("Uploads", [])]',
      'etag = s3.upload_part(Bucket=b, Key="m/", UploadId=up, PartNumber=1, Body=b"in parts")["ETag"]',
      's3.complete_multipart_upload(Bucket=b, Key="m/", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})',
      'out["multipart"] = read("m/")',
      's3.delete_object(Bucket=b, Key="a/")',
      'out["deleted"] = err(lambda: s3.head_object(Bucket=b, Key="a/"))',
      'out["kept"] = [read("a"), read("a/x")]',
      'gone = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "c/"}, {"Key": "m/"}, {"Key": "d/"}]})',
      'out["gone"] = sorted(d["Key"] for d in gone["Deleted"])',
      'out["after"] = [keys(), prefixes(Delimiter="/")]',
      'print(json.dumps(out))',
    ], b) as Record<string, unknown>;
    expect(seen).toEqual({
      get: 'slash bytes', head: [11, 'text/plain'],
      all: [['a', 6], ['a/', 11], ['a/x', 6]],
      // With the delimiter "a/" is in the common prefix "a/"; under the prefix "a/" it is a key.
      top: [['a'], ['a/']], inside: [['a/', 'a/x'], ['a/', 'a/x']], v1: ['a', 'a/', 'a/x'],
      versions: ['a', 'a/', 'a/x'], paged: ['a', 'a/', 'a/x'], 'after a/': ['a/x'],
      copies: ['slash bytes', 'slash bytes', 'inside'],
      uploads: ['m/'], multipart: 'in parts',
      deleted: [404, '404'], kept: ['file a', 'inside'],
      gone: ['c/', 'd/', 'm/'],
      // The folders S3 made for "c/", "d/" and "m/" went with their objects.
      after: [['a', 'a/x', 'plain.txt'], ['a/']],
    });
  });

  test('boto3: with no bytes a key ending in "/" is the folder alone; an empty PUT over an object "d/" makes it empty; deleting "d/" removes the folder S3 made', async () => {
    const b = await t.newBucket();
    const seen = await t.boto3([
      keysOf, prefixesOf, read,
      'out = {}',
      's3.put_object(Bucket=b, Key="e/", Body=b"")',
      'out["marker"] = [keys(), prefixes(Delimiter="/"), err(lambda: s3.get_object(Bucket=b, Key="e/"))]',
      's3.delete_object(Bucket=b, Key="e/")',
      'out["marker gone"] = prefixes(Delimiter="/")',
      's3.put_object(Bucket=b, Key="d/", Body=b"bytes")',
      's3.put_object(Bucket=b, Key="d/", Body=b"")',
      'h = s3.head_object(Bucket=b, Key="d/")',
      'out["emptied"] = [read("d/"), h["ContentLength"], h["ETag"], keys()]',
      's3.delete_object(Bucket=b, Key="d/")',
      'out["deleted"] = [keys(), prefixes(Delimiter="/")]',
      'print(json.dumps(out))',
    ], b) as Record<string, unknown>;
    expect(seen).toEqual({
      marker: [[], ['e/'], [404, 'NoSuchKey']], 'marker gone': [],
      emptied: ['', 0, '"d41d8cd98f00b204e9800998ecf8427e"', ['d/']],
      deleted: [[], []],
    });
  });

  test('aws CLI: put-object, get-object, list-objects-v2 and delete-object of "dir/" with bytes, beside "dir/inner.txt"', async () => {
    const b = await t.newBucket(['dir/inner.txt']);
    const body = join(t.home, `${b}.bin`);
    await writeFile(body, 'aws bytes');
    await t.aws('s3api', 'put-object', '--bucket', b, '--key', 'dir/', '--body', body);
    const out = join(t.home, `${b}.out`);
    await t.aws('s3api', 'get-object', '--bucket', b, '--key', 'dir/', out);
    expect(await readFile(out, 'utf8')).toBe('aws bytes');
    const listed = JSON.parse(await t.aws('s3api', 'list-objects-v2', '--bucket', b, '--prefix', 'dir/', '--query', 'Contents[].[Key,Size]', '--output', 'json'));
    expect(listed).toEqual([['dir/', 9], ['dir/inner.txt', 13]]);
    await t.aws('s3api', 'delete-object', '--bucket', b, '--key', 'dir/');
    const after = JSON.parse(await t.aws('s3api', 'list-objects-v2', '--bucket', b, '--query', 'Contents[].Key', '--output', 'json'));
    expect(after).toEqual(['dir/inner.txt']);
  });
});

describe('the object "a/" in the programmatic interface', () => {
  test('it is the file of the empty name in the folder "a"; no name given there can be empty; renamed, it is an ordinary key; the folder deleted, it is gone', async () => {
    const b = await t.newBucket(['a/x.txt']);
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/', Body: 'slash' }));
    const folderId = await folderAt(t.o, `${b}/a`);
    const files = await filesIn(t.o, folderId);
    expect(files.map((f) => [f.name, f.size])).toEqual([['', 5], ['x.txt', 7]]);
    const slash = files.find((f) => f.name === '')!;
    // Pages by name: the empty name first, its cursor taking the next page on.
    const page1 = await t.o.post('/collections/list', { folder_id: folderId, limit: 1 });
    const page2 = await t.o.post('/collections/list', { folder_id: folderId, limit: 1, cursor: page1.body.next_cursor });
    expect([page1.body.files.map((f: { name: string }) => f.name), page2.body.files.map((f: { name: string }) => f.name)]).toEqual([[''], ['x.txt']]);
    // An empty name is refused wherever a name is given.
    const renamedEmpty = await t.o.post('/collections/file/update', { file_id: files[1]!.file_id, name: '' });
    expect([renamedEmpty.status, renamedEmpty.body.error?.code]).toEqual([400, 'invalid_name']);
    const renamed = await t.o.post('/collections/file/update', { file_id: slash.file_id, name: 'named.txt' });
    expect(renamed.status).toBe(200);
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/' })), 404, 'NoSuchKey');
    const named = await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/named.txt' }));
    expect(await named.Body!.transformToString()).toBe('slash');
    // Deleting the folder takes the object "a/" with everything else in it.
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'a/', Body: 'again' }));
    const deleted = await t.o.post('/collections/folder/delete', { folder_id: folderId, recursive: true });
    expect(deleted.status).toBe(200);
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/' })), 404, 'NoSuchKey');
    await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'a/x.txt' })), 404, 'NoSuchKey');
  });
});

describe('the object "a/" and a key confined to a folder', () => {
  test('inside its folder the key writes, reads and deletes "team/" and "team/sub/"; outside, "out/" is as if it did not exist', async () => {
    const b = await t.newBucket(['team/keep.txt', 'out/x.txt']);
    await t.s3.send(new PutObjectCommand({ Bucket: b, Key: 'out/', Body: 'outside' }));
    const confined = s3Client(t.url, await makeKey(t.o, ['read', 'write'], await folderAt(t.o, `${b}/team`))).client;
    try {
      for (const Key of ['team/', 'team/sub/']) {
        await confined.send(new PutObjectCommand({ Bucket: b, Key, Body: `at ${Key}` }));
        expect(await (await confined.send(new GetObjectCommand({ Bucket: b, Key }))).Body!.transformToString()).toBe(`at ${Key}`);
      }
      await expectS3Error(confined.send(new GetObjectCommand({ Bucket: b, Key: 'out/' })), 404, 'NoSuchKey');
      await expectS3Error(confined.send(new PutObjectCommand({ Bucket: b, Key: 'out/', Body: 'over' })), 403, 'AccessDenied');
      await expectS3Error(confined.send(new PutObjectCommand({ Bucket: b, Key: 'other/', Body: 'new' })), 403, 'AccessDenied');
      await confined.send(new DeleteObjectCommand({ Bucket: b, Key: 'out/' }));
      expect(await (await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'out/' }))).Body!.transformToString()).toBe('outside');
      await confined.send(new DeleteObjectCommand({ Bucket: b, Key: 'team/' }));
      await expectS3Error(t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'team/' })), 404, 'NoSuchKey');
      expect(await (await t.s3.send(new GetObjectCommand({ Bucket: b, Key: 'team/keep.txt' }))).Body!.transformToString()).toBe('team/keep.txt');
    } finally {
      confined.destroy();
    }
  });
});
