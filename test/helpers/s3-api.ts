/**
 * Coffer's S3 interface (contract §12) from a test: a key made through the programmatic
 * interface, an @aws-sdk/client-s3 client signed with it, the request headers the SDK sent, and
 * S3 errors checked by their code and status.
 */
import { S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { expect } from 'vitest';
import type { TestOrigin } from './origin.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export interface S3Key {
  keyId: string;
  secret: string;
}

/** A key of the programmatic interface (contract §10): its id is the access key id, the key the secret. */
export async function makeKey(o: TestOrigin, scopes: string[] = ['read', 'write'], folderId?: string): Promise<S3Key> {
  const made = await o.post('/collections/keys/create', { name: `s3-${scopes.join('-')}`, scopes, ...(folderId ? { folder_id: folderId } : {}) });
  if (made.status !== 200) throw new Error(`keys/create: ${made.status} ${JSON.stringify(made.body)}`);
  return { keyId: made.body.key_id, secret: made.body.key };
}

export interface RecordingClient {
  client: S3Client;
  /** The headers of every request the client sent, in order. */
  sent: Array<Record<string, string>>;
}

/** A client of the S3 interface at `endpoint` (the S3 port's root). */
export function s3Client(endpoint: string, key: S3Key, options: Partial<ConstructorParameters<typeof S3Client>[0]> = {}): RecordingClient {
  const client = new S3Client({
    endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: key.keyId, secretAccessKey: key.secret }, maxAttempts: 1, ...options,
  });
  const sent: Array<Record<string, string>> = [];
  client.middlewareStack.add((next) => async (args) => {
    sent.push({ ...(args.request as { headers: Record<string, string> }).headers });
    return next(args);
  }, { step: 'finalizeRequest', priority: 'low', name: 'recordHeaders' });
  return { client, sent };
}

/** Asserts a call fails with this S3 error code and status. */
export async function expectS3Error(call: Promise<unknown>, status: number, code: string): Promise<S3ServiceException> {
  try {
    await call;
  } catch (err) {
    const e = err as S3ServiceException;
    expect({ status: e.$metadata?.httpStatusCode, code: e.name }, String(e.message)).toEqual({ status, code });
    return e;
  }
  throw new Error(`expected ${status} ${code}, but the call succeeded`);
}

/** The ready files of a folder through the programmatic interface, by name. */
export async function filesIn(o: TestOrigin, folderId: string | null): Promise<Array<{ file_id: string; name: string; visibility: string; size: number; content_type: string }>> {
  const list = await o.post('/collections/list', { folder_id: folderId, limit: 1000 });
  return list.body.files;
}

/** A folder's id by its path from the root ("photos/2026"), through the programmatic interface. */
export async function folderAt(o: TestOrigin, path: string): Promise<string> {
  let id: string | null = null;
  for (const name of path.split('/')) {
    const list: { body: { folders: unknown } } = await o.post('/collections/list', { folder_id: id, limit: 1000 });
    const found: { folder_id: string } | undefined = (list.body.folders as Array<{ folder_id: string; name: string }>).find((f) => f.name === name);
    if (!found) throw new Error(`no folder ${name} in ${path}`);
    id = found.folder_id;
  }
  return id!;
}
