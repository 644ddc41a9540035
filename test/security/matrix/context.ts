/**
 * The matrix's world: two places, and fresh targets in them made with the root key, so that
 * every cell acts on something of its own and a refusal or a success leaves the next cell alone.
 */
import { randomBytes } from 'node:crypto';
import type { TestOrigin } from '../../helpers/origin.js';
import { tus, tusMetadata } from '../../helpers/tus.js';
import type { MatrixCaller, Place, Places } from './callers.js';

export interface Session {
  bucket: string;
  key: string;
  uploadId: string;
  fileId: string;
}

export interface Ctx {
  o: TestOrigin;
  places: Places;
  /** The S3 port's root. */
  s3Url: string;
  /** POSTs JSON as `caller`; answers the status (and the body, for fixtures). */
  post(path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }>;
  folderOf(place: Place): string;
  /** A new ready 3-byte file in the place, by the root key. */
  freshFile(place: Place): Promise<{ file_id: string; name: string }>;
  /** A new empty folder in the place, by the root key. */
  freshFolder(place: Place): Promise<string>;
  /** A new empty top-level folder (an S3 bucket), by the root key. */
  freshTop(): Promise<{ folder_id: string; name: string }>;
  /** An open upload of 3 bytes in the place: the caller's own where it may start one, else the root key's. */
  uploadFor(caller: MatrixCaller, place: Place, sendPart: boolean): Promise<Session>;
  /** An open tus upload of 3 bytes in the place: the caller's own where it may start one, else the root key's. */
  tusFor(caller: MatrixCaller, place: Place): Promise<string>;
  /** A key confined to the place, by the root key. */
  keyIn(place: Place): Promise<string>;
  /** A webhook made by an admin key confined to the place. */
  webhookIn(place: Place): Promise<string>;
}

export const BYTES = Buffer.from('abc');
export const unique = (prefix: string) => `${prefix}-${randomBytes(6).toString('hex')}`;

export function makeCtx(o: TestOrigin, places: Places, s3Url: string): Ctx {
  const root = { authorization: `Bearer ${o.key}` };
  // The caller's headers alone: a session or a grant sends no Bearer key.
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    const { status, body: answer } = await o.post(path, body, { headers: { authorization: undefined, ...headers } });
    return { status, body: answer };
  };
  const must = async (path: string, body: unknown, headers: Record<string, string> = root) => {
    const r = await post(path, body, headers);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const folderOf = (place: Place) => places[place];
  const initiate = (place: Place, headers: Record<string, string>) => post('/collections/upload/file', {
    name: unique('up') + '.txt', visibility: 'Private', size: BYTES.length, file_type: 'document', folder_id: folderOf(place),
  }, headers);
  const sendPart = (s: Session, headers: Record<string, string>) => must('/collections/upload/file-progress', { ...s, partNumber: 1, body: BYTES.toString('base64') }, headers);
  const webhookMakers = new Map<Place, Record<string, string>>();

  const ctx: Ctx = {
    o, places, s3Url, post, folderOf,
    async freshFile(place) {
      const init = await initiate(place, root);
      const s: Session = { bucket: init.body.bucket, key: init.body.key, uploadId: init.body.uploadId, fileId: init.body.fileId };
      await sendPart(s, root);
      const done = await must('/collections/upload/complete-upload', { file_id: s.fileId });
      return { file_id: done.file_id, name: done.name };
    },
    async freshFolder(place) {
      return (await must('/collections/folder/create', { name: unique('sub'), visibility: 'Private', parent_id: folderOf(place) })).folder_id;
    },
    async freshTop() {
      const made = await must('/collections/folder/create', { name: unique('top'), visibility: 'Private' });
      return { folder_id: made.folder_id, name: made.name };
    },
    async uploadFor(caller, place, withPart) {
      let headers = caller.headers;
      let init = await initiate(place, headers);
      if (init.status !== 200) {
        headers = root;
        init = await initiate(place, root);
      }
      const s: Session = { bucket: init.body.bucket, key: init.body.key, uploadId: init.body.uploadId, fileId: init.body.fileId };
      if (withPart) await sendPart(s, headers);
      return s;
    },
    async tusFor(caller, place) {
      const create = (auth: string | null) => tus(o.url, auth, {
        method: 'POST', url: '/tus',
        headers: { 'upload-length': String(BYTES.length), 'upload-metadata': tusMetadata({ filename: unique('tus') + '.txt', folder_id: folderOf(place) }) },
      });
      let made = await create(caller.headers.authorization ?? null);
      if (made.status !== 201) made = await create(root.authorization);
      if (made.status !== 201) throw new Error(`tus create: ${made.status} ${made.body.toString()}`);
      return new URL(made.headers.location!).pathname;
    },
    async keyIn(place) {
      return (await must('/collections/keys/create', { name: unique('k'), scopes: ['read'], folder_id: folderOf(place) })).key_id;
    },
    async webhookIn(place) {
      let maker = webhookMakers.get(place);
      if (!maker) {
        const k = await must('/collections/keys/create', { name: unique('hooks'), scopes: ['read', 'write', 'admin'], folder_id: folderOf(place) });
        maker = { authorization: `Bearer ${k.key}` };
        webhookMakers.set(place, maker);
      }
      return (await must('/collections/webhooks/create', { url: 'http://127.0.0.1:9/hook', events: ['*'] }, maker)).webhook_id;
    },
  };
  return ctx;
}
