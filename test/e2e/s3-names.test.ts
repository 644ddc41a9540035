/**
 * Names through S3 (contract §12; docs/s3.md, "Keys and folders"): CreateBucket
 * follows S3's naming rules (400 InvalidBucketName otherwise); a key whose percent-encoded bytes
 * are not UTF-8 is 400 InvalidURI, as S3 answers it; keys a folder tree cannot hold as they are
 * (a lone space, "a//b") are refused with S3-style errors by every operation that would make
 * them, while a key that is also a prefix ("a" and "a/b") is two objects, each listed, read and
 * deleted on its own. Keys ending in "/" are s3-folder-keys.test.ts's.
 */
import { execFile } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { AWS, PYTHON } from '../helpers/s3-clients.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

const t = useS3Fixture('n');

/** A request signed over its path exactly as sent (already percent-encoded), as S3 signs it. */
function signedRawPath(method: string, path: string, body = Buffer.alloc(0)): Promise<RawAnswer> {
  const url = new URL(t.url);
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const scope = `${amzDate.slice(0, 8)}/us-east-1/s3/aws4_request`;
  const payload = createHash('sha256').update(body).digest('hex');
  const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': payload, 'x-amz-date': amzDate };
  const names = Object.keys(headers).sort();
  const canonical = [method, path, '', names.map((n) => `${n}:${headers[n]}\n`).join(''), names.join(';'), payload].join('\n');
  const hmac = (k: Buffer | string, x: string) => createHmac('sha256', k).update(x).digest();
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${t.key.secret}`, amzDate.slice(0, 8)), 'us-east-1'), 's3'), 'aws4_request');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${t.key.keyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${hmac(signingKey, toSign).toString('hex')}`;
  headers['content-length'] = String(body.length);
  return rawRequest(t.url, path, { method, headers, body });
}

describe('bucket names', () => {
  test('CreateBucket refuses what S3 refuses with 400 InvalidBucketName, and takes the corners S3 allows (boto3)', async () => {
    const refused = [
      'ab', 'a'.repeat(64), 'Upper', 'under_score', '-start', 'end-', '.start', 'end.', 'a..b', 'a.-b', 'a-.b', '192.168.5.4', '1.2.3.4',
      'xn--abc', 'sthree-abc', 'amzn-s3-demo-abc', 'abc-s3alias', 'abc--ol-s3', 'abc.mrap', 'abc--x-s3', 'abc--table-s3',
    ];
    const suffix = randomBytes(3).toString('hex');
    const allowed = [`a${suffix}`.slice(0, 3), `b-${suffix}.c-d`, `c${suffix}`.padEnd(63, 'x'), `1.2.3.${suffix}x`, `xn-${suffix}`, `d${suffix}-s3alia`];
    const script = [
      'import boto3, json, os',
      'from botocore.config import Config',
      'from botocore.exceptions import ClientError',
      's3 = boto3.client("s3", endpoint_url=os.environ["COFFER_S3_ENDPOINT"], region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))',
      'out = {}',
      'for n in json.loads(os.environ["NAMES"]):',
      '    try:',
      '        s3.create_bucket(Bucket=n)',
      '        out[n] = "ok"',
      '    except ClientError as e:',
      '        out[n] = [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]]',
      'print(json.dumps(out))',
    ].join('\n');
    // The names go through the environment, beside the clients' own settings.
    const out = await new Promise<string>((resolve, reject) => {
      execFile(PYTHON, ['-c', script], { env: { ...t.c.env, NAMES: JSON.stringify([...refused, ...allowed]) }, cwd: t.home, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(String(stdout))));
    });
    const result = JSON.parse(out.trim().split('\n').pop()!) as Record<string, unknown>;
    for (const n of refused) expect([n, result[n]]).toEqual([n, [400, 'InvalidBucketName']]);
    for (const n of allowed) expect([n, result[n]]).toEqual([n, 'ok']);
  });
});

describe('keys that are not UTF-8', () => {
  // The router refuses such a path before the S3 routes see it: the listener answers S3's
  // InvalidURI ("Couldn't parse the specified URI.") in XML.
  test('PUT, GET, HEAD and DELETE of a key with %FF (or a cut or surrogate sequence) are 400 and store nothing; valid UTF-8 escapes are a key (raw signed requests)', async () => {
    const b = await t.newBucket();
    for (const path of [`/${b}/bad%FF.txt`, `/${b}/dir%C3/x.txt`, `/${b}/%ED%A0%80.txt`]) {
      for (const method of ['PUT', 'GET', 'HEAD', 'DELETE']) {
        const a = await signedRawPath(method, path, method === 'PUT' ? Buffer.from('x') : undefined);
        const code = /<Code>(.*)<\/Code>/.exec(a.body.toString())?.[1] ?? null;
        expect([path, method, a.status, code]).toEqual([path, method, 400, method === 'HEAD' ? null : 'InvalidURI']);
      }
    }
    const good = await signedRawPath('PUT', `/${b}/caf%C3%A9.txt`, Buffer.from('é'));
    expect(good.status).toBe(200);
    const got = await signedRawPath('GET', `/${b}/caf%C3%A9.txt`);
    expect([got.status, got.body.toString()]).toEqual([200, 'é']);
    const listed = (await signedRawPath('GET', `/${b}`)).body.toString();
    expect(listed.match(/<Key>[^<]*<\/Key>/g)).toEqual(['<Key>café.txt</Key>']);
  });
});

describe('keys a folder tree cannot hold', () => {
  test('boto3: a lone space, "a//b", a leading "/", "." and ".." are refused by PutObject, CopyObject and CreateMultipartUpload; nothing is stored', async () => {
    const b = await t.newBucket();
    const seen = await t.boto3([
      's3.put_object(Bucket=b, Key="src.txt", Body=b"src")',
      'src = {"Bucket": b, "Key": "src.txt"}',
      'out = {}',
      'for k in ["d/ ", " ", "a//b", "/lead", "x/./y", "x/../y", "trail /z"]:',
      '    out[k] = [',
      '        err(lambda: s3.put_object(Bucket=b, Key=k, Body=b"bytes")),',
      '        err(lambda: s3.copy_object(Bucket=b, Key=k, CopySource=src)),',
      '        err(lambda: s3.create_multipart_upload(Bucket=b, Key=k)),',
      '    ]',
      'out["marker"] = err(lambda: s3.put_object(Bucket=b, Key="folder/", Body=b""))',
      'out["listed"] = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=b).get("Contents", []))',
      'out["prefixes"] = [p["Prefix"] for p in s3.list_objects_v2(Bucket=b, Delimiter="/").get("CommonPrefixes", [])]',
      'print(json.dumps(out))',
    ], b) as Record<string, unknown>;
    const badArgument = [400, 'InvalidArgument'];
    for (const k of ['d/ ', ' ', 'a//b', '/lead', 'x/./y', 'x/../y', 'trail /z']) expect([k, seen[k]]).toEqual([k, [badArgument, badArgument, badArgument]]);
    // A directory marker with no bytes is the folder: a common prefix, not a key. The refused
    // keys made no folder.
    expect(seen.marker).toBe('ok');
    expect([seen.listed, seen.prefixes]).toEqual([['src.txt'], ['folder/']]);
  });

  test('a key that is also a prefix: "a" and "a/b" are two objects, listed, read, copied and deleted each on its own (boto3)', async () => {
    const b = await t.newBucket();
    const seen = await t.boto3([
      's3.put_object(Bucket=b, Key="a", Body=b"file a")',
      's3.put_object(Bucket=b, Key="a/b", Body=b"file a/b")',
      'out = {}',
      'page = s3.list_objects_v2(Bucket=b, Delimiter="/")',
      'out["top"] = [[o["Key"] for o in page.get("Contents", [])], [p["Prefix"] for p in page.get("CommonPrefixes", [])]]',
      'out["all"] = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]',
      'out["versions"] = [v["Key"] for v in s3.list_object_versions(Bucket=b).get("Versions", [])]',
      'out["a"] = s3.get_object(Bucket=b, Key="a")["Body"].read().decode()',
      'out["a/b"] = s3.get_object(Bucket=b, Key="a/b")["Body"].read().decode()',
      's3.copy_object(Bucket=b, Key="a/c", CopySource={"Bucket": b, "Key": "a"})',
      'out["copied"] = s3.get_object(Bucket=b, Key="a/c")["Body"].read().decode()',
      's3.delete_object(Bucket=b, Key="a")',
      'out["after"] = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]',
      'out["gone"] = err(lambda: s3.head_object(Bucket=b, Key="a"))',
      'print(json.dumps(out))',
    ], b) as Record<string, unknown>;
    expect(seen).toEqual({
      top: [['a'], ['a/']], all: ['a', 'a/b'], versions: ['a', 'a/b'], a: 'file a', 'a/b': 'file a/b', copied: 'file a',
      after: ['a/b', 'a/c'], gone: [404, '404'],
    });
  });

  test('aws CLI: put-object of a lone-space key fails with InvalidArgument, and nothing is listed', async () => {
    const b = await t.newBucket();
    const put = await t.c.run(AWS, ['--endpoint-url', t.url, 's3api', 'put-object', '--bucket', b, '--key', 'docs/ ', '--body', '/etc/hostname']);
    expect(put.code).not.toBe(0);
    expect(put.stderr).toContain('InvalidArgument');
    const ls = await t.c.run(AWS, ['--endpoint-url', t.url, 's3api', 'list-objects-v2', '--bucket', b]);
    expect([ls.code, ls.stdout.includes('docs/')]).toEqual([0, false]);
  });

  test('aws s3 sync of a directory holding a name with white space at its end: that file fails, the others go up', async () => {
    const b = await t.newBucket();
    const dir = join(t.home, `sync-${b}`);
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'ok.txt'), 'ok');
    await writeFile(join(dir, 'sub', 'fine.txt'), 'fine');
    await writeFile(join(dir, 'trailing '), 'space');
    const sync = await t.c.run(AWS, ['--endpoint-url', t.url, 's3', 'sync', dir, `s3://${b}/`]);
    expect(sync.code).not.toBe(0);
    expect(sync.stderr).toContain('InvalidArgument');
    const ls = await t.c.ok(AWS, ['--endpoint-url', t.url, 's3api', 'list-objects-v2', '--bucket', b, '--query', 'Contents[].Key', '--output', 'json']);
    expect(JSON.parse(ls)).toEqual(['ok.txt', 'sub/fine.txt']);
  });
});
