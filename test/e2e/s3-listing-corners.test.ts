/**
 * Listing corners as S3 answers them (contract §12; docs/s3.md): max-keys=0 is an empty page,
 * not truncated; encoding-type=url percent-encodes exactly the fields S3 names (ListObjects:
 * Key, Prefix, Delimiter, Marker, NextMarker; ListObjectsV2: Key, Prefix, Delimiter,
 * StartAfter; ListObjectVersions and ListMultipartUploads: Key, Prefix, Delimiter, KeyMarker,
 * NextKeyMarker) and nothing else, and boto3 (which asks for it on every listing) reads keys with
 * spaces, "+", "%", "&" and non-ASCII back unchanged; ListBuckets pages with max-buckets,
 * continuation-token and prefix.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { CreateMultipartUploadCommand, ListBucketsCommand } from '@aws-sdk/client-s3';
import { expectS3Error } from '../helpers/s3-api.js';
import { PYTHON } from '../helpers/s3-clients.js';
import { signedRequest } from '../helpers/s3-signed.js';
import { useS3Fixture } from '../helpers/s3-fixture.js';

const t = useS3Fixture('l');

/** A listing's answer as raw XML, and each element's texts by name. */
async function listing(bucket: string, query: Record<string, string>): Promise<{ xml: string; field: (name: string) => string[] }> {
  const answer = await signedRequest(t.url, t.key, { method: 'GET', path: `/${bucket}`, query });
  const xml = answer.body.toString();
  expect(answer.status, xml).toBe(200);
  return { xml, field: (name) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, 'g'))].map((m) => m[1]!) };
}

describe('max-keys=0', () => {
  test('ListObjects, ListObjectsV2 and ListObjectVersions answer an empty page that is not truncated', async () => {
    const b = await t.newBucket(['a.txt', 'd/b.txt']);
    const queries: Array<Record<string, string>> = [{}, { 'list-type': '2' }, { versions: '' }, { delimiter: '/' }, { 'list-type': '2', delimiter: '/' }];
    for (const query of queries) {
      const { xml, field } = await listing(b, { ...query, 'max-keys': '0' });
      expect([field('IsTruncated'), field('MaxKeys')], xml).toEqual([['false'], ['0']]);
      expect(xml, JSON.stringify(query)).not.toMatch(/<Contents>|<Version>|<CommonPrefixes>|<NextMarker>|<NextContinuationToken>|<NextKeyMarker>/);
      if (query['list-type'] === '2') expect(field('KeyCount')).toEqual(['0']);
    }
  });
});

describe('encoding-type=url', () => {
  const keys = ['p q/a b.txt', 'p q/c+d.txt', 'p q/é/f.txt', 'p q/%41.txt'];

  test('ListObjects (v1) encodes Key, Prefix, Delimiter, Marker and NextMarker', async () => {
    const b = await t.newBucket(keys);
    const { field } = await listing(b, { 'encoding-type': 'url', prefix: 'p q/', delimiter: '/', marker: 'p q/%41.txt', 'max-keys': '2' });
    expect(field('Key')).toEqual(['p%20q/a%20b.txt', 'p%20q/c%2Bd.txt']);
    expect(field('Prefix')).toEqual(['p%20q/']);
    expect(field('Delimiter')).toEqual(['/']);
    expect(field('Marker')).toEqual(['p%20q/%2541.txt']);
    expect(field('NextMarker')).toEqual(['p%20q/c%2Bd.txt']);
    expect([field('IsTruncated'), field('EncodingType'), field('Name')]).toEqual([['true'], ['url'], [b]]);
    const rest = await listing(b, { 'encoding-type': 'url', prefix: 'p q/', delimiter: '+', marker: 'p q/c+d.txt' });
    // "+" is the delimiter here: encoded too, and so is the common prefix it ends.
    expect([rest.field('Delimiter'), rest.field('Key'), rest.field('Prefix')]).toEqual([['%2B'], ['p%20q/%C3%A9/f.txt'], ['p%20q/']]);
  });

  test('ListObjectsV2 encodes Key, Prefix, Delimiter, StartAfter and common prefixes, not the continuation tokens', async () => {
    const b = await t.newBucket(keys);
    const first = await listing(b, { 'list-type': '2', 'encoding-type': 'url', prefix: 'p q/', delimiter: '/', 'start-after': 'p q/%41.txt', 'max-keys': '2' });
    expect(first.field('Key')).toEqual(['p%20q/a%20b.txt', 'p%20q/c%2Bd.txt']);
    expect(first.field('StartAfter')).toEqual(['p%20q/%2541.txt']);
    const [token] = first.field('NextContinuationToken');
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = await listing(b, { 'list-type': '2', 'encoding-type': 'url', prefix: 'p q/', delimiter: '/', 'continuation-token': token! });
    expect(second.field('ContinuationToken')).toEqual([token]);
    expect(second.field('Key')).toEqual([]);
    expect(second.field('Prefix')).toEqual(['p%20q/', 'p%20q/%C3%A9/']);
  });

  test('ListMultipartUploads encodes Key, Prefix, Delimiter, KeyMarker and NextKeyMarker, not the upload ids', async () => {
    const b = await t.newBucket([]);
    const ids: string[] = [];
    for (const Key of ['p q/a b.bin', 'p q/c+d.bin', 'p q/é/f.bin']) ids.push((await t.s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key }))).UploadId!);
    const { field } = await listing(b, { uploads: '', 'encoding-type': 'url', prefix: 'p q/', delimiter: '/', 'key-marker': 'p q/%41.bin', 'max-uploads': '1' });
    expect(field('Key')).toEqual(['p%20q/a%20b.bin']);
    expect([field('KeyMarker'), field('NextKeyMarker'), field('Delimiter'), field('Prefix')]).toEqual([['p%20q/%2541.bin'], ['p%20q/a%20b.bin'], ['/'], ['p%20q/']]);
    expect([field('UploadId'), field('NextUploadIdMarker'), field('EncodingType')]).toEqual([[ids[0]], [ids[0]], ['url']]);
    const rest = await listing(b, { uploads: '', 'encoding-type': 'url', prefix: 'p q/', delimiter: '/', 'key-marker': 'p q/a b.bin' });
    expect([rest.field('Key'), rest.field('Prefix')]).toEqual([['p%20q/c%2Bd.bin'], ['p%20q/', 'p%20q/%C3%A9/']]);
  });

  test('without encoding-type, nothing is encoded; another value is InvalidArgument', async () => {
    const b = await t.newBucket(keys);
    const { field } = await listing(b, { 'list-type': '2', prefix: 'p q/' });
    expect(field('Key')).toEqual(['p q/%41.txt', 'p q/a b.txt', 'p q/c+d.txt', 'p q/é/f.txt']);
    const bad = await signedRequest(t.url, t.key, { method: 'GET', path: `/${b}`, query: { 'encoding-type': 'base64' } });
    expect([bad.status, bad.body.toString()]).toEqual([400, expect.stringContaining('<Code>InvalidArgument</Code><Message>Invalid Encoding Method specified in Request</Message>')]);
  });

  test('boto3 lists keys with spaces, "+", "%", "&" and non-ASCII back unchanged through all three listings', async () => {
    const odd = ['s p/a b.txt', 's p/c+d.txt', 's p/%41 & <x>.txt', 's p/é/ü.txt'];
    const b = await t.newBucket(odd);
    const script = [
      'import boto3, json, os, sys',
      'from botocore.config import Config',
      's3 = boto3.client("s3", endpoint_url=os.environ["COFFER_S3_ENDPOINT"], region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))',
      'b = sys.argv[1]',
      'v1 = [o["Key"] for o in s3.list_objects(Bucket=b)["Contents"]]',
      'v2 = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=b, PaginationConfig={"PageSize": 1}) for o in p.get("Contents", [])]',
      'vs = [o["Key"] for o in s3.list_object_versions(Bucket=b)["Versions"]]',
      'pre = [p["Prefix"] for p in s3.list_objects_v2(Bucket=b, Prefix="s p/", Delimiter="/").get("CommonPrefixes", [])]',
      'print(json.dumps({"v1": v1, "v2": v2, "versions": vs, "prefixes": pre}))',
    ].join('\n');
    const seen = JSON.parse(await t.c.ok(PYTHON, ['-c', script, b]));
    const sorted = [...odd].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(seen).toEqual({ v1: sorted, v2: sorted, versions: sorted, prefixes: ['s p/é/'] });
  });
});

describe('ListBuckets in pages', () => {
  test('max-buckets, continuation-token and prefix page through the buckets in name order', async () => {
    const stem = `lb${randomBytes(3).toString('hex')}`;
    const names = ['a', 'b', 'c', 'c.d', 'e'].map((s) => `${stem}-${s}`);
    for (const n of [...names].reverse()) await t.newBucket([], n);
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const out = await t.s3.send(new ListBucketsCommand({ MaxBuckets: 2, Prefix: `${stem}-`, ContinuationToken: token }));
      expect(out.Prefix).toBe(`${stem}-`);
      pages.push((out.Buckets ?? []).map((x) => x.Name!));
      token = out.ContinuationToken;
    } while (token !== undefined && pages.length < 10);
    expect(pages).toEqual([names.slice(0, 2), names.slice(2, 4), names.slice(4)]);
    const all = await t.s3.send(new ListBucketsCommand({}));
    expect(all.ContinuationToken).toBeUndefined();
    expect((all.Buckets ?? []).map((x) => x.Name).filter((n) => n!.startsWith(stem))).toEqual(names);
    expect((await t.s3.send(new ListBucketsCommand({ Prefix: `${stem}-c` }))).Buckets?.map((x) => x.Name)).toEqual([`${stem}-c`, `${stem}-c.d`]);
    await expectS3Error(t.s3.send(new ListBucketsCommand({ ContinuationToken: 'not a token!' })), 400, 'InvalidArgument');
  });
});
