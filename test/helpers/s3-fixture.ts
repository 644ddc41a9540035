/**
 * The one set-up of the S3 end-to-end tests (contract §12): an origin on the storage the test
 * project chooses, a key of the programmatic interface, an @aws-sdk/client-s3 client signed with
 * it, the outside clients (aws, rclone, s3cmd, boto3) configured in a temporary HOME, and new
 * buckets named by the file's tag. `useS3Fixture` registers the hooks that start and close them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { CreateBucketCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { startTestOrigin, type TestOrigin, type TestOriginOptions } from './origin.js';
import { makeKey, s3Client, type RecordingClient, type S3Key } from './s3-api.js';
import { AWS, PYTHON, setUpClients, type Clients } from './s3-clients.js';
import type { SettingName } from '../../src/config/config.js';

export interface S3Fixture {
  readonly o: TestOrigin;
  /** The S3 port's root, http://host:port. */
  readonly url: string;
  readonly key: S3Key;
  readonly s3: S3Client;
  /** The headers of every request `s3` sent, in order. */
  readonly sent: RecordingClient['sent'];
  readonly c: Clients;
  /** The clients' HOME, removed at the end. */
  readonly home: string;
  /** A new bucket (`tag-` and ten hex digits unless named), holding these keys, each with its own key as bytes. */
  newBucket(keys?: readonly string[], name?: string): Promise<string>;
  /** The aws CLI against the S3 port; throws with its output when it fails. */
  aws(...args: string[]): Promise<string>;
  /** A boto3 script with `s3` (a client), `b` (the bucket) and `err(f)` ("ok", or [status, code]); its last line printed is JSON. */
  boto3(lines: readonly string[], bucket: string): Promise<unknown>;
}

/** Python set-up for `boto3`: a path-style client without retries, and `err` for expected failures. */
const BOTO3_PRELUDE = [
  'import boto3, json, os, sys',
  'from botocore.config import Config',
  'from botocore.exceptions import ClientError',
  's3 = boto3.client("s3", endpoint_url=os.environ["COFFER_S3_ENDPOINT"], region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))',
  'b = sys.argv[1]',
  'def err(f):',
  '    try:',
  '        f()',
  '        return "ok"',
  '    except ClientError as e:',
  '        return [e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]]',
];

interface Opened {
  o: TestOrigin;
  key: S3Key;
  port: RecordingClient;
  c: Clients;
  home: string;
}

export interface S3FixtureOptions {
  /** Settings beside COFFER_LOG_LEVEL=warn. */
  settings?: Partial<Record<SettingName, string>>;
  /** How the origin starts (a clock, for one). */
  origin?: TestOriginOptions;
  /** For the set-up and the close (default 60 s). */
  hookTimeoutMs?: number;
}

/** Registers beforeAll/afterAll for the file; its fields are there from its first test on. */
export function useS3Fixture(tag: string, options: S3FixtureOptions = {}): S3Fixture {
  const hookTimeoutMs = options.hookTimeoutMs ?? 60_000;
  let opened: Opened | null = null;
  let origin: TestOrigin | undefined;
  let home = '';
  const get = (): Opened => {
    if (!opened) throw new Error('the S3 fixture is not open (used outside a test?)');
    return opened;
  };
  beforeAll(async () => {
    origin = await startTestOrigin({ COFFER_LOG_LEVEL: 'warn', ...options.settings }, options.origin);
    const key = await makeKey(origin);
    home = await mkdtemp(join(tmpdir(), `coffer-s3-${tag}-`));
    const c = await setUpClients(home, origin.origin.s3Url, key);
    opened = { o: origin, key, port: s3Client(origin.origin.s3Url, key), c, home };
  }, hookTimeoutMs);
  afterAll(async () => {
    opened?.port.client.destroy();
    opened = null;
    await origin?.close();
    if (home) await rm(home, { recursive: true, force: true });
  }, hookTimeoutMs);

  return {
    get o() { return get().o; },
    get url() { return get().o.origin.s3Url; },
    get key() { return get().key; },
    get s3() { return get().port.client; },
    get sent() { return get().port.sent; },
    get c() { return get().c; },
    get home() { return get().home; },
    async newBucket(keys = [], name = `${tag}-${randomBytes(5).toString('hex')}`) {
      const s3 = get().port.client;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      for (const Key of keys) await s3.send(new PutObjectCommand({ Bucket: name, Key, Body: Key }));
      return name;
    },
    aws: (...args) => get().c.ok(AWS, ['--endpoint-url', get().o.origin.s3Url, ...args]),
    async boto3(lines, bucket) {
      const out = await get().c.ok(PYTHON, ['-c', [...BOTO3_PRELUDE, ...lines].join('\n'), bucket]);
      return JSON.parse(out.trim().split('\n').pop()!);
    },
  };
}
