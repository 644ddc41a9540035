/**
 * Contract §4 (upload) over real HTTP against a real origin: initiate, file-progress,
 * complete-upload, status, abort and expiry. Every failure is checked for its status,
 * code and the details the contract names, and for the §2 error shape.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import { openUploadIds, storedObjectIds, storedParts } from '../helpers/stored-object.js';
import { expectError } from '../helpers/api.js';
import { rawRequest } from '../helpers/raw-http.js';
import { ManualClock, poll, sha256 } from '../kit/index.js';

const CHUNK = 5 * 1024 * 1024;
const MAX_BODY = 8 * 1024 * 1024;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const OPAQUE_ID = /^[A-Za-z0-9_-]{16,}$/;
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

type Res = { status: number; body: any; headers: Headers };

interface Session {
  file_id: string;
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
  chunk_size: number;
  part_count: number;
  size: number;
  [k: string]: unknown;
}

const initiateBody = (fields: Record<string, unknown> = {}) => ({ name: 'file.bin', visibility: 'Public', size: 10, file_type: 'other', ...fields });

async function initiate(o: TestOrigin, fields: Record<string, unknown> = {}): Promise<Session> {
  const r = await o.post('/collections/upload/file', initiateBody(fields));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Session;
}

const sessionOf = (s: Session) => ({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId });

function sendPart(o: TestOrigin, s: Session, partNumber: unknown, data: Buffer | string, overrides: Record<string, unknown> = {}): Promise<Res> {
  const body = typeof data === 'string' ? data : data.toString('base64');
  return o.post('/collections/upload/file-progress', { ...sessionOf(s), partNumber, body, ...overrides });
}

const sendRaw = (o: TestOrigin, raw: string | Buffer): Promise<Res> => o.post('/collections/upload/file-progress', undefined, { raw });

/** The JSON of a file-progress request written by hand, `body` (already JSON-escaped text) first or last. */
function rawPart(s: Session, partNumber: number, bodyText: string, bodyFirst = false): string {
  const rest = `"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":${partNumber}`;
  return bodyFirst ? `{"body":"${bodyText}",${rest}}` : `{${rest},"body":"${bodyText}"}`;
}

const complete = (o: TestOrigin, fileId: string) => o.post('/collections/upload/complete-upload', { file_id: fileId });
const status = (o: TestOrigin, fileId: string) => o.post('/collections/upload/status', { file_id: fileId });
const abort = (o: TestOrigin, fileId: string) => o.post('/collections/upload/abort', { file_id: fileId });

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

describe('upload (contract §4)', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin();
  });
  afterAll(async () => {
    await o.close();
  });

  // ---------------------------------------------------------------- initiate

  describe('initiate', () => {
    it('answers the file record plus the upload session', async () => {
      const r = await o.post('/collections/upload/file', { name: 'photo.jpg', visibility: 'Public', size: 7340032, file_type: 'image' });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const s = r.body;
      expect(s).toMatchObject({
        name: 'photo.jpg', visibility: 'Public', size: 7340032, file_type: 'image', content_type: 'image/jpeg',
        folder_id: null, status: 'uploading', sha256: null, delivery_url: null,
        chunk_size: 5242880, part_count: 2,
      });
      expect(s.fileId).toBe(s.file_id);
      expect(s.file_id).toMatch(OPAQUE_ID);
      for (const f of ['bucket', 'key', 'uploadId']) {
        expect(typeof s[f]).toBe('string');
        expect(s[f].length).toBeGreaterThan(0);
      }
      expect(s.created_at).toMatch(ISO_MS);
      expect(s.updated_at).toMatch(ISO_MS);
      const other = await initiate(o);
      expect(other.file_id).not.toBe(s.file_id);
      expect(other.uploadId).not.toBe(s.uploadId);
    });

    it.each([
      [0, 1], [1, 1], [CHUNK - 1, 1], [CHUNK, 1], [CHUNK + 1, 2], [2 * CHUNK, 2], [2 * CHUNK + 1, 3], [7340032, 2], [10_000 * CHUNK, 10_000],
    ])('size %i has part_count %i', async (size, parts) => {
      const s = await initiate(o, { size });
      expect(s.part_count).toBe(parts);
      expect(s.chunk_size).toBe(CHUNK);
      expect(s.size).toBe(size);
    });

    it('accepts visibility in any letter case and answers Public or Private', async () => {
      for (const [given, answered] of [['public', 'Public'], ['PUBLIC', 'Public'], ['pUbLiC', 'Public'], ['Public', 'Public'],
        ['private', 'Private'], ['PRIVATE', 'Private'], ['PrIvAtE', 'Private']] as const) {
        const s = await initiate(o, { visibility: given });
        expect(s.visibility, given).toBe(answered);
      }
      expectError(await o.post('/collections/upload/file', initiateBody({ visibility: 'hidden' })), 400, 'invalid_visibility', { field: 'visibility' });
      expectError(await o.post('/collections/upload/file', initiateBody({ visibility: '' })), 400, 'invalid_visibility', { field: 'visibility' });
    });

    it('accepts every file_type of the contract and refuses others', async () => {
      for (const t of ['image', 'video', 'document', 'audio', 'archive', 'other']) {
        const s = await initiate(o, { file_type: t });
        expect(s.file_type).toBe(t);
      }
      expectError(await o.post('/collections/upload/file', initiateBody({ file_type: 'picture' })), 400, 'invalid_file_type', { field: 'file_type' });
      expectError(await o.post('/collections/upload/file', initiateBody({ file_type: 5 })), 400, 'invalid_request', { field: 'file_type' });
    });

    it('derives content_type from the extension unless given', async () => {
      const cases: Array<[string, string]> = [
        ['photo.jpg', 'image/jpeg'], ['PHOTO.JPG', 'image/jpeg'], ['a.png', 'image/png'], ['report.pdf', 'application/pdf'],
        ['song.mp3', 'audio/mpeg'], ['clip.mp4', 'video/mp4'], ['notes.txt', 'text/plain'], ['archive.zip', 'application/zip'],
        ['no-extension', 'application/octet-stream'], ['weird.zzqqxx', 'application/octet-stream'],
      ];
      for (const [name, type] of cases) {
        const s = await initiate(o, { name });
        expect(s.content_type, name).toBe(type);
      }
      const given = await initiate(o, { name: 'photo.jpg', content_type: 'text/plain; charset=utf-8' });
      expect(given.content_type).toBe('text/plain; charset=utf-8');
      expectError(await o.post('/collections/upload/file', initiateBody({ content_type: 'not a type' })), 400, 'invalid_content_type', { field: 'content_type' });
    });

    it('puts the file in a folder, or at the root for null / absent folder_id', async () => {
      const folder = await o.post('/collections/folder/create', { name: 'uploads-' + randomBytes(4).toString('hex'), visibility: 'Public' });
      expect(folder.status).toBe(200);
      const inFolder = await initiate(o, { folder_id: folder.body.folder_id });
      expect(inFolder.folder_id).toBe(folder.body.folder_id);
      expect((await initiate(o, { folder_id: null })).folder_id).toBeNull();
      expect((await initiate(o)).folder_id).toBeNull();
    });

    it('answers 404 folder_not_found for an unknown folder_id, before the field rules', async () => {
      expectError(await o.post('/collections/upload/file', initiateBody({ folder_id: 'no-such-folder' })), 404, 'folder_not_found', { folder_id: 'no-such-folder' });
      // An unknown id wins over a bad name and a bad size (contract §2 precedence).
      expectError(await o.post('/collections/upload/file', initiateBody({ folder_id: 'no-such-folder', name: '..', size: -1 })), 404, 'folder_not_found');
    });

    it('refuses negative, fractional and non-numeric sizes', async () => {
      expectError(await o.post('/collections/upload/file', initiateBody({ size: -1 })), 400, 'invalid_size', { field: 'size' });
      expectError(await o.post('/collections/upload/file', initiateBody({ size: 1.5 })), 400, 'invalid_size', { field: 'size' });
      expectError(await o.post('/collections/upload/file', initiateBody({ size: '10' })), 400, 'invalid_request', { field: 'size' });
      expectError(await o.post('/collections/upload/file', initiateBody({ size: null })), 400, 'invalid_request', { field: 'size' });
    });

    it('answers 413 file_too_large above the default limit of 10000 chunks', async () => {
      expectError(await o.post('/collections/upload/file', initiateBody({ size: 10_000 * CHUNK + 1 })), 413, 'file_too_large', { field: 'size', limit: 10_000 * CHUNK });
      // An integer too large for a double to hold exactly is still just "over the limit".
      expectError(await o.post('/collections/upload/file', initiateBody({ size: 1e20 })), 413, 'file_too_large', { field: 'size' });
    });

    it('answers 413 file_too_large above COFFER_MAX_FILE_SIZE', async () => {
      const small = await startTestOrigin({ COFFER_MAX_FILE_SIZE: '1000' });
      try {
        const ok = await small.post('/collections/upload/file', initiateBody({ size: 1000 }));
        expect(ok.status).toBe(200);
        expect(ok.body.part_count).toBe(1);
        expectError(await small.post('/collections/upload/file', initiateBody({ size: 1001 })), 413, 'file_too_large', { field: 'size', limit: 1000 });
        expectError(await small.post('/collections/upload/file', initiateBody({ size: CHUNK * 3 })), 413, 'file_too_large', { field: 'size', limit: 1000 });
      } finally {
        await small.close();
      }
    });

    it('requires name, visibility, size and file_type and refuses unknown fields', async () => {
      for (const field of ['name', 'visibility', 'size', 'file_type']) {
        const body: Record<string, unknown> = initiateBody();
        delete body[field];
        expectError(await o.post('/collections/upload/file', body), 400, 'invalid_request', { field });
      }
      expectError(await o.post('/collections/upload/file', initiateBody({ colour: 'red' })), 400, 'invalid_request', { field: 'colour' });
    });

    describe('names', () => {
      const bad: Array<[string, string]> = [
        ['empty', ''],
        ['only spaces', '     '],
        ['only white space', ' \t \n '],
        ['256 bytes of 2-byte characters', '\u00e9'.repeat(128)],
        ['256 bytes of 3-byte characters', '日'.repeat(85) + 'a'],
        ['256 bytes of 4-byte characters', '🎉'.repeat(64)],
        ['256 ASCII bytes', 'x'.repeat(256)],
        ['a slash', 'a/b.txt'],
        ['only a slash', '/'],
        ['a leading slash', '/etc'],
        ['DEL', 'a\u007fb.txt'],
        ['"."', '.'],
        ['".."', '..'],
        ['".." after trimming', '  ..  '],
        ['a lone surrogate', 'a\ud800b.txt'],
      ];
      for (let c = 0; c <= 0x1f; c++) bad.push([`U+${c.toString(16).padStart(4, '0').toUpperCase()} inside`, `a${String.fromCharCode(c)}b.txt`]);
      bad.push(['U+0000 at the start', '\u0000abc'], ['U+001F at the end', 'abc\u001f']);

      it.each(bad)('refuses a name with %s: 400 invalid_name', async (_why, name) => {
        expectError(await o.post('/collections/upload/file', initiateBody({ name })), 400, 'invalid_name', { field: 'name' });
      });

      const good: Array<[string, string, string]> = [
        ['255 bytes of 2-byte characters', '\u00e9'.repeat(127) + 'a', '\u00e9'.repeat(127) + 'a'],
        ['255 bytes of 3-byte characters', '日'.repeat(85), '日'.repeat(85)],
        ['255 bytes of 4-byte characters', '🎉'.repeat(63) + 'abc', '🎉'.repeat(63) + 'abc'],
        ['255 ASCII bytes', 'x'.repeat(255), 'x'.repeat(255)],
        ['255 bytes once trimmed', '   ' + 'y'.repeat(255) + '   ', 'y'.repeat(255)],
        ['Japanese', '日本語 ファイル.png', '日本語 ファイル.png'],
        ['emoji with joiners', '🎉 party 👨‍👩‍👧‍👦.gif', '🎉 party 👨‍👩‍👧‍👦.gif'],
        ['a combining accent (not normalized)', 'cafe\u0301.txt', 'cafe\u0301.txt'],
        ['leading and trailing spaces', '  padded name.txt  ', 'padded name.txt'],
        ['three dots', '...', '...'],
        ['a leading dot', '.hidden', '.hidden'],
        ['a backslash and quotes', 'a\\b "c" \'d\'.txt', 'a\\b "c" \'d\'.txt'],
        ['a single byte', 'a', 'a'],
      ];
      it.each(good)('keeps a name with %s', async (_why, name, kept) => {
        const s = await initiate(o, { name });
        expect(s.name).toBe(kept);
        const got = await o.post('/collections/file/get', { file_id: s.file_id });
        expect(got.status).toBe(200);
        expect(got.body.name).toBe(kept);
      });

      it('derives content_type from a unicode name', async () => {
        expect((await initiate(o, { name: '日本語 ファイル.png' })).content_type).toBe('image/png');
      });
    });
  });

  // ---------------------------------------------------------------- file-progress

  describe('file-progress', () => {
    it('answers {file_id, partNumber, size, etag, received_parts, part_count}', async () => {
      const data = randomBytes(100);
      const s = await initiate(o, { size: 100 });
      const r = await sendPart(o, s, 1, data);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['etag', 'file_id', 'partNumber', 'part_count', 'received_parts', 'size']);
      expect(r.body).toMatchObject({ file_id: s.file_id, partNumber: 1, size: 100, received_parts: 1, part_count: 1 });
      expect(typeof r.body.etag).toBe('string');
      expect(r.body.etag.length).toBeGreaterThan(0);
      const done = await complete(o, s.file_id);
      expect(done.status).toBe(200);
      expect(done.body.sha256).toBe(sha256(data));
    });

    it('answers 404 upload_not_found when any one of the four session values is wrong', async () => {
      const s = await initiate(o, { size: 4 });
      const data = Buffer.from('abcd');
      for (const [field, value] of [['bucket', 'other-bucket'], ['key', 'files/nope'], ['uploadId', 'nope'], ['fileId', 'nope'],
        ['bucket', ''], ['key', ''], ['uploadId', ''], ['fileId', '']] as const) {
        expectError(await sendPart(o, s, 1, data, { [field]: value }), 404, 'upload_not_found');
      }
      // The right values still work afterwards.
      expect((await sendPart(o, s, 1, data)).status).toBe(200);
    });

    it('answers 404 when the values of two different uploads are mixed', async () => {
      const a = await initiate(o, { size: 4 });
      const b = await initiate(o, { size: 4 });
      const data = Buffer.from('abcd');
      const mixes: Array<Record<string, string>> = [
        { fileId: b.fileId },
        { uploadId: b.uploadId },
        { key: b.key },
        { key: b.key, uploadId: b.uploadId },
        { uploadId: b.uploadId, fileId: b.fileId },
        { key: b.key, fileId: b.fileId },
      ];
      for (const mix of mixes) expectError(await sendPart(o, a, 1, data, mix), 404, 'upload_not_found');
      expect((await status(o, a.file_id)).body.received).toEqual([]);
      expect((await status(o, b.file_id)).body.received).toEqual([]);
    });

    it('refuses part numbers outside 1..part_count: 400 invalid_part_number', async () => {
      const s = await initiate(o, { size: 2 * CHUNK + 5 }); // 3 parts
      for (const n of [0, 4, 1.5, -1, 100, 1e300]) {
        expectError(await sendPart(o, s, n, Buffer.alloc(5)), 400, 'invalid_part_number', { field: 'partNumber', part_count: 3 });
      }
      const one = await initiate(o, { size: 0 });
      expectError(await sendPart(o, one, 2, ''), 400, 'invalid_part_number', { field: 'partNumber' });
    });

    it('refuses a partNumber that is not a JSON number: 400 invalid_request', async () => {
      const s = await initiate(o, { size: 4 });
      for (const n of ['1', null, true, [1], { n: 1 }]) {
        expectError(await sendPart(o, s, n, Buffer.from('abcd')), 400, 'invalid_request', { field: 'partNumber' });
      }
      const { partNumber: _omit, ...noPart } = { ...sessionOf(s), partNumber: 1, body: 'YWJjZA==' };
      expectError(await o.post('/collections/upload/file-progress', noPart), 400, 'invalid_request', { field: 'partNumber' });
    });

    it('refuses a body that is not a string: 400 invalid_request', async () => {
      const s = await initiate(o, { size: 4 });
      for (const body of [123, null, true, ['YWJjZA=='], { b: 'YWJjZA==' }]) {
        expectError(await o.post('/collections/upload/file-progress', { ...sessionOf(s), partNumber: 1, body }), 400, 'invalid_request', { field: 'body' });
      }
      expectError(await o.post('/collections/upload/file-progress', { ...sessionOf(s), partNumber: 1 }), 400, 'invalid_request', { field: 'body' });
      for (const f of ['bucket', 'key', 'uploadId', 'fileId']) {
        expectError(await o.post('/collections/upload/file-progress', { ...sessionOf(s), [f]: 7, partNumber: 1, body: 'YWJjZA==' }), 400, 'invalid_request', { field: f });
      }
      expectError(await o.post('/collections/upload/file-progress', { ...sessionOf(s), partNumber: 1, body: 'YWJjZA==', extra: 1 }), 400, 'invalid_request', { field: 'extra' });
      expectError(await sendRaw(o, rawPart(s, 1, 'YWJjZA==').replace('{', '{"body":"YWJjZA==",')), 400, 'invalid_request');
      expectError(await sendRaw(o, '[]'), 400, 'invalid_request');
      expectError(await sendRaw(o, '"YWJjZA=="'), 400, 'invalid_request');
      // Nothing was stored by any of these.
      expect((await status(o, s.file_id)).body.received).toEqual([]);
    });

    it('refuses malformed JSON: 400 invalid_request', async () => {
      const s = await initiate(o, { size: 4 });
      for (const raw of ['', '{', rawPart(s, 1, 'YWJjZA==').slice(0, -1), rawPart(s, 1, 'YWJjZA==').slice(0, -2), rawPart(s, 1, 'YWJjZA==') + 'x',
        rawPart(s, 1, 'YWJj\nZA=='), rawPart(s, 1, 'YWJjZA\n'), rawPart(s, 1, 'YWJjZA==\n'), rawPart(s, 1, 'YW\u0000JjZA=='),
        rawPart(s, 1, 'YW$jZA\t=='), rawPart(s, 1, '\nYWJjZA=='), rawPart(s, 1, 'YWJ\n\\/ZA=='), rawPart(s, 1, 'YWJjZA==', true).replace('"body":"', '"body":'), '{"body":"YWJjZA==",}', 'not json']) {
        expectError(await sendRaw(o, raw), 400, 'invalid_request');
      }
    });

    it.each([
      ['a "$"', 'YW$jZA=='],
      ['a space inside', 'YWJj ZA=='],
      ['an escaped newline inside', 'YWJj\\nZA=='],
      ['an escaped tab inside', 'YWJj\\tZA=='],
      ['a trailing space', 'YWJjZA== '],
      ['a lone trailing character', 'YWJjZ'],
      ['padding in the middle', 'YQ==YmNk'],
      ['padding then data', 'YWJjZA=x'],
      ['too much padding', 'YWJjZA==='],
      ['padding on a whole group', 'YWJjZGVm='],
      ['a non-ASCII character', 'YWJjZ\u00e9=='],
      ['an escaped non-alphabet character', 'YWJj\\u0024A=='],
      ['a dot', 'YWJj.A=='],
    ])('refuses base64 with %s: 400 invalid_base64', async (_why, text) => {
      const s = await initiate(o, { size: 4 });
      expectError(await sendRaw(o, rawPart(s, 1, text)), 400, 'invalid_base64', { field: 'body' });
      expect((await status(o, s.file_id)).body.received).toEqual([]);
    });

    it('accepts the URL-safe alphabet', async () => {
      let data: Buffer;
      do data = randomBytes(3000); while (!/\+/.test(data.toString('base64')) || !/\//.test(data.toString('base64')));
      const s = await initiate(o, { size: data.length });
      const urlSafe = data.toString('base64url');
      expect(urlSafe).toMatch(/-/);
      expect(urlSafe).toMatch(/_/);
      expect(urlSafe).not.toMatch(/[+/=]/);
      const r = await sendPart(o, s, 1, urlSafe);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.size).toBe(3000);
      const done = await complete(o, s.file_id);
      expect(done.body.sha256).toBe(sha256(data));
    });

    it('accepts unpadded standard base64 and URL-safe base64 with padding', async () => {
      const data = Buffer.from([0xfb, 0xff, 0xbf, 0x01]); // "+/+/AQ==" in the standard alphabet
      for (const text of ['+/+/AQ', '-_-_AQ==', '-_-_AQ']) {
        const s = await initiate(o, { size: 4 });
        const r = await sendPart(o, s, 1, text);
        expect(r.status, `${text}: ${JSON.stringify(r.body)}`).toBe(200);
        expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(data));
      }
    });

    it('accepts JSON escapes in body ("\\/", "\\u0041") and either field order', async () => {
      const data = Buffer.from([0xfb, 0xff, 0xbf, 0xfb, 0xef, 0xbe, 0x00, 0x10, 0x83]);
      const b64 = data.toString('base64');
      expect(b64).toContain('/');
      const escaped = b64.replace(/\//g, '\\/').replace(/A/g, '\\u0041');
      for (const bodyFirst of [false, true]) {
        const s = await initiate(o, { size: data.length });
        const r = await sendRaw(o, rawPart(s, 1, escaped, bodyFirst));
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(data));
      }
      // Field order and white space around the separators do not matter.
      const s = await initiate(o, { size: data.length });
      const spaced = `{ "partNumber" : 1 ,\n "body" :\t"${b64}" , "fileId":"${s.fileId}","uploadId":"${s.uploadId}", "key" : "${s.key}","bucket":"${s.bucket}" }`;
      const r = await sendRaw(o, spaced);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(data));
    });

    it('refuses wrong part sizes: 400 part_size_mismatch with expected and received', async () => {
      const s = await initiate(o, { size: CHUNK + 10 }); // parts of CHUNK and 10
      expectError(await sendPart(o, s, 1, Buffer.alloc(10)), 400, 'part_size_mismatch', { field: 'body', expected: CHUNK, received: 10 });
      expectError(await sendPart(o, s, 1, ''), 400, 'part_size_mismatch', { expected: CHUNK, received: 0 });
      expectError(await sendPart(o, s, 2, Buffer.alloc(11)), 400, 'part_size_mismatch', { field: 'body', expected: 10, received: 11 });
      expectError(await sendPart(o, s, 2, Buffer.alloc(9)), 400, 'part_size_mismatch', { expected: 10, received: 9 });
      const small = await initiate(o, { size: 3 });
      expectError(await sendPart(o, small, 1, Buffer.alloc(4)), 400, 'part_size_mismatch', { expected: 3, received: 4 });
      const empty = await initiate(o, { size: 0 });
      expectError(await sendPart(o, empty, 1, 'AA=='), 400, 'part_size_mismatch', { expected: 0, received: 1 });
      expect((await status(o, s.file_id)).body.received).toEqual([]);
      // The right size for the last part is accepted.
      expect((await sendPart(o, s, 2, Buffer.alloc(10))).status).toBe(200);
    });

    it('takes parts out of order and in parallel; status tracks them; the file is the bytes', async () => {
      const data = randomBytes(2 * CHUNK + 1000);
      const s = await initiate(o, { size: data.length, name: 'three.bin' });
      expect(s.part_count).toBe(3);
      const part = (n: number) => data.subarray((n - 1) * CHUNK, n * CHUNK);

      const first = await sendPart(o, s, 3, part(3));
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ partNumber: 3, size: 1000, received_parts: 1, part_count: 3 });
      const mid = await status(o, s.file_id);
      expect(mid.status).toBe(200);
      expect(mid.body).toMatchObject({ file_id: s.file_id, status: 'uploading', part_count: 3, received: [3], missing: [1, 2] });
      expectError(await complete(o, s.file_id), 409, 'missing_parts', { missing: [1, 2] });

      const both = await Promise.all([sendPart(o, s, 2, part(2)), sendPart(o, s, 1, part(1))]);
      for (const r of both) expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(both.map((r) => r.body.partNumber)).toEqual([2, 1]);
      expect(both.map((r) => r.body.size)).toEqual([CHUNK, CHUNK]);
      // Each answer counts its own part and part 3, and whichever was recorded last counts all three;
      // two parallel parts may both see 3 ([2, 3] on SQLite, which records one at a time; [3, 3] can happen on PostgreSQL).
      const counts = both.map((r) => r.body.received_parts as number);
      for (const n of counts) expect(n).toBeGreaterThanOrEqual(2);
      for (const n of counts) expect(n).toBeLessThanOrEqual(3);
      expect(Math.max(...counts)).toBe(3);

      const full = await status(o, s.file_id);
      expect(full.body).toMatchObject({ status: 'uploading', received: [1, 2, 3], missing: [] });

      const done = await complete(o, s.file_id);
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ file_id: s.file_id, status: 'ready', size: data.length, sha256: sha256(data), name: 'three.bin' });
      const after = await status(o, s.file_id);
      expect(after.body).toMatchObject({ file_id: s.file_id, status: 'ready', part_count: 3, received: [1, 2, 3], missing: [] });
    });

    it('replaces a part that is sent again', async () => {
      const a = randomBytes(1000);
      const b = randomBytes(1000);
      const s = await initiate(o, { size: 1000 });
      const r1 = await sendPart(o, s, 1, a);
      const r2 = await sendPart(o, s, 1, b);
      expect(r1.status).toBe(200);
      expect(r2.status).toBe(200);
      expect(r2.body.received_parts).toBe(1);
      expect(r2.body.etag).not.toBe(r1.body.etag);
      expect((await status(o, s.file_id)).body.received).toEqual([1]);
      // Once the parts are recorded (status waits for that), only the last one's blob is kept.
      const parts = () => storedParts(o, s.uploadId);
      expect(await parts()).toHaveLength(1);
      const done = await complete(o, s.file_id);
      expect(done.body.sha256).toBe(sha256(b));
      expect(done.body.sha256).not.toBe(sha256(a));
      // The parts are dropped once the file is whole.
      expect(await poll(async () => (await parts()).length === 0, { timeoutMs: 3000 })).toBe(true);
    });

    it('keeps the earlier part when a re-sent one is refused', async () => {
      const a = randomBytes(50);
      const s = await initiate(o, { size: 50 });
      expect((await sendPart(o, s, 1, a)).status).toBe(200);
      expectError(await sendPart(o, s, 1, Buffer.alloc(49)), 400, 'part_size_mismatch');
      expectError(await sendPart(o, s, 1, 'not*base64'), 400, 'invalid_base64');
      expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(a));
    });

    it('uploads a 0-byte file with one empty part', async () => {
      const s = await initiate(o, { size: 0, name: 'empty.txt' });
      expect(s.part_count).toBe(1);
      const r = await sendPart(o, s, 1, '');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ partNumber: 1, size: 0, received_parts: 1, part_count: 1 });
      const done = await complete(o, s.file_id);
      expect(done.body).toMatchObject({ status: 'ready', size: 0, sha256: EMPTY_SHA256, content_type: 'text/plain' });
      // Body first works for the empty string too.
      const s2 = await initiate(o, { size: 0 });
      expect((await sendRaw(o, rawPart(s2, 1, '', true))).status).toBe(200);
      expect((await complete(o, s2.file_id)).body.sha256).toBe(EMPTY_SHA256);
    });

    it('answers 409 upload_completed after complete', async () => {
      const data = Buffer.from('hello');
      const s = await initiate(o, { size: 5 });
      expect((await sendPart(o, s, 1, data)).status).toBe(200);
      expect((await complete(o, s.file_id)).status).toBe(200);
      expectError(await sendPart(o, s, 1, data), 409, 'upload_completed');
      // The state conflict comes before the field rules.
      expectError(await sendPart(o, s, 0, data), 409, 'upload_completed');
      expectError(await sendPart(o, s, 1, Buffer.alloc(99)), 409, 'upload_completed');
      expectError(await sendPart(o, s, 1, 'bad$base64'), 409, 'upload_completed');
      // ...and a malformed body before the state conflict.
      expectError(await sendPart(o, s, '1', data), 400, 'invalid_request', { field: 'partNumber' });
      // Mixed-up values of a completed upload are still unknown values.
      expectError(await sendPart(o, s, 1, data, { uploadId: 'other' }), 404, 'upload_not_found');
      // The file did not change.
      const got = await o.post('/collections/file/get', { file_id: s.file_id });
      expect(got.body.sha256).toBe(sha256(data));
    });

    it('answers in the order malformed (400), unknown (404), then field rules', async () => {
      const s = await initiate(o, { size: 4 });
      const unknown = { fileId: 'nope' };
      // Malformed bodies win over unknown ids.
      expectError(await sendPart(o, s, '1', Buffer.from('abcd'), unknown), 400, 'invalid_request', { field: 'partNumber' });
      expectError(await o.post('/collections/upload/file-progress', { ...sessionOf(s), ...unknown, partNumber: 1, body: 5 }), 400, 'invalid_request', { field: 'body' });
      expectError(await sendRaw(o, rawPart({ ...s, fileId: 'nope' }, 1, 'YWJjZA==').slice(0, -1)), 400, 'invalid_request');
      // A raw control character inside the string is malformed JSON, not merely bad base64.
      expectError(await sendRaw(o, rawPart({ ...s, fileId: 'nope' }, 1, 'YWJjZA\n')), 400, 'invalid_request');
      expectError(await sendRaw(o, rawPart({ ...s, fileId: 'nope' }, 1, 'YWJj\nZA==')), 400, 'invalid_request');
      // Unknown ids win over every field rule.
      expectError(await sendPart(o, s, 0, Buffer.from('abcd'), unknown), 404, 'upload_not_found');
      expectError(await sendPart(o, s, 2, Buffer.from('abcd'), unknown), 404, 'upload_not_found');
      expectError(await sendPart(o, s, 1, 'YW$jZA==', unknown), 404, 'upload_not_found');
      expectError(await sendPart(o, s, 1, Buffer.alloc(3), unknown), 404, 'upload_not_found');
      // Field rules: partNumber before the body's content (code order: part number, base64, size).
      expectError(await sendPart(o, s, 0, 'YW$jZA=='), 400, 'invalid_part_number');
      expectError(await sendPart(o, s, 1, 'YW$j'), 400, 'invalid_base64');
      expectError(await sendPart(o, s, 1, Buffer.alloc(3)), 400, 'part_size_mismatch');
    });

    it('answers 413 payload_too_large for a Content-Length over 8 MiB, without reading the body', async () => {
      const s = await initiate(o, { size: 4 });
      const head = `{"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":1,"body":"`;
      const r = await rawRequest(o.url, '/collections/upload/file-progress', {
        method: 'POST', open: true, body: Buffer.from(head + 'QUFB'.repeat(1000)),
        headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json', 'content-length': String(MAX_BODY + 1) },
      });
      expectError(r, 413, 'payload_too_large', { limit: MAX_BODY });
      expect((await status(o, s.file_id)).body.received).toEqual([]);
    }, 15_000);

    it('answers 413 payload_too_large for a chunked body that grows over 8 MiB', async () => {
      const s = await initiate(o, { size: CHUNK });
      const head = Buffer.from(`{"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":1,"body":"`);
      const piece = Buffer.alloc(256 * 1024, 'Q'); // valid base64 text
      const total = 9 * 1024 * 1024;
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new Uint8Array(head));
        },
        pull(c) {
          if (sent >= total) {
            c.enqueue(new Uint8Array(Buffer.from('"}')));
            c.close();
            return;
          }
          c.enqueue(new Uint8Array(piece));
          sent += piece.length;
        },
      });
      let res: Response;
      try {
        res = await fetch(o.url + '/collections/upload/file-progress', {
          method: 'POST',
          headers: { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' },
          body: stream,
          duplex: 'half',
        } as RequestInit & { duplex: 'half' });
      } catch (err) {
        throw new Error(`the origin closed the connection instead of answering 413: ${String((err as Error).cause ?? err)}`);
      }
      expect(res.headers.get('transfer-encoding')).not.toBe('chunked'); // the answer, not the request
      const body = await res.json();
      expectError({ status: res.status, body, headers: res.headers }, 413, 'payload_too_large', { limit: MAX_BODY });
      expect((await status(o, s.file_id)).body.received).toEqual([]);
    }, 30_000);

    it('accepts a body over the 64 KiB JSON limit (a whole base64 chunk)', async () => {
      const data = randomBytes(100 * 1024);
      const s = await initiate(o, { size: data.length });
      const r = await sendPart(o, s, 1, data);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect((await complete(o, s.file_id)).body.sha256).toBe(sha256(data));
    });

    it('leaves no temporary part files behind after refused chunks', async () => {
      const s = await initiate(o, { size: 4 });
      await sendPart(o, s, 1, Buffer.alloc(3));
      await sendPart(o, s, 1, 'YW$jZA==');
      await sendPart(o, s, 9, Buffer.alloc(4));
      await sendPart(o, s, 1, Buffer.alloc(4), { fileId: 'nope' });
      await sendRaw(o, rawPart(s, 1, 'YWJjZA==').slice(0, -1));
      if (!o.blobStore) {
        // The embedded store's scratch files (S3 keeps no files of the origin's: its UploadPart is all or nothing).
        const tmp = join(o.dataDir, 'blobs', 'tmp');
        const clean = await poll(async () => (await listDir(tmp)).length === 0, { timeoutMs: 3000 });
        expect(clean, `left in ${tmp}: ${(await listDir(tmp)).join(', ')}`).toBe(true);
      }
      expect(await storedParts(o, s.uploadId)).toEqual([]);
    });
  });

  // ---------------------------------------------------------------- complete

  describe('complete-upload', () => {
    it('answers 409 missing_parts with exactly the missing part numbers', async () => {
      const s = await initiate(o, { size: 3 * CHUNK + 7 }); // 4 parts; only the small last one is sent
      expectError(await complete(o, s.file_id), 409, 'missing_parts', { missing: [1, 2, 3, 4] });
      expect((await sendPart(o, s, 4, Buffer.alloc(7))).status).toBe(200);
      const r = await complete(o, s.file_id);
      expectError(r, 409, 'missing_parts');
      expect(r.body.error.details.missing).toEqual([1, 2, 3]);
      const st = await status(o, s.file_id);
      expect(st.body).toMatchObject({ status: 'uploading', received: [4], missing: [1, 2, 3] });
      const zero = await initiate(o, { size: 0 });
      expectError(await complete(o, zero.file_id), 409, 'missing_parts', { missing: [1] });
    });

    it('makes the file ready with the SHA-256 of its bytes and is idempotent', async () => {
      const data = randomBytes(4321);
      const s = await initiate(o, { size: data.length, name: 'doc.pdf', file_type: 'document', visibility: 'private' });
      expect((await sendPart(o, s, 1, data)).status).toBe(200);
      const first = await complete(o, s.file_id);
      expect(first.status).toBe(200);
      const rec = first.body;
      expect(rec).toMatchObject({
        file_id: s.file_id, name: 'doc.pdf', visibility: 'Private', size: 4321, file_type: 'document', content_type: 'application/pdf',
        folder_id: null, status: 'ready', sha256: sha256(data), created_at: s.created_at,
      });
      expect(rec.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(rec.updated_at).toMatch(ISO_MS);
      expect(Date.parse(rec.updated_at)).toBeGreaterThanOrEqual(Date.parse(rec.created_at));
      expect(typeof rec.delivery_url).toBe('string');
      expect(rec.delivery_url).toContain(s.file_id);
      for (const f of ['fileId', 'bucket', 'key', 'uploadId', 'chunk_size', 'part_count']) expect(rec).not.toHaveProperty(f);

      const again = await complete(o, s.file_id);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(rec);
      const got = await o.post('/collections/file/get', { file_id: s.file_id });
      // file/get adds what edges reported serving (contract §11); nothing yet.
      expect(got.body).toEqual({ ...rec, downloads: 0, bytes_served: 0 });
    });

    it('gives the same record to concurrent completes', async () => {
      const data = randomBytes(2048);
      const s = await initiate(o, { size: data.length });
      expect((await sendPart(o, s, 1, data)).status).toBe(200);
      const [a, b] = await Promise.all([complete(o, s.file_id), complete(o, s.file_id)]);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(b.status, JSON.stringify(b.body)).toBe(200);
      expect(a.body).toEqual(b.body);
      expect(a.body.sha256).toBe(sha256(data));
    });

    it('answers 404 file_not_found for an unknown id', async () => {
      expectError(await complete(o, 'no-such-file'), 404, 'file_not_found', { file_id: 'no-such-file' });
      expectError(await complete(o, ''), 404, 'file_not_found');
      expectError(await o.post('/collections/upload/complete-upload', {}), 400, 'invalid_request', { field: 'file_id' });
      expectError(await o.post('/collections/upload/complete-upload', { file_id: 1 }), 400, 'invalid_request', { field: 'file_id' });
      expectError(await o.post('/collections/upload/complete-upload', { file_id: 'x', fileId: 'x' }), 400, 'invalid_request', { field: 'fileId' });
    });
  });

  // ---------------------------------------------------------------- status and abort

  describe('status and abort', () => {
    it('reports received and missing parts while uploading and all after complete', async () => {
      const data = randomBytes(10);
      const s = await initiate(o, { size: 10 });
      const before = await status(o, s.file_id);
      expect(before.status).toBe(200);
      expect(before.body).toMatchObject({ file_id: s.file_id, status: 'uploading', part_count: 1, received: [], missing: [1] });
      await sendPart(o, s, 1, data);
      expect((await status(o, s.file_id)).body).toMatchObject({ status: 'uploading', received: [1], missing: [] });
      await complete(o, s.file_id);
      expect((await status(o, s.file_id)).body).toMatchObject({ file_id: s.file_id, status: 'ready', part_count: 1, received: [1], missing: [] });
      expectError(await status(o, 'no-such-file'), 404, 'file_not_found', { file_id: 'no-such-file' });
    });

    it('aborts an open upload: parts gone, status and complete 404, chunks 404 upload_not_found', async () => {
      const s = await initiate(o, { size: CHUNK + 3 });
      expect((await sendPart(o, s, 2, Buffer.from('xyz'))).status).toBe(200);
      const parts = () => storedParts(o, s.uploadId);
      expect((await parts()).length).toBe(1);

      const r = await abort(o, s.file_id);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ file_id: s.file_id, aborted: true });

      expectError(await status(o, s.file_id), 404, 'file_not_found');
      expectError(await complete(o, s.file_id), 404, 'file_not_found');
      expectError(await o.post('/collections/file/get', { file_id: s.file_id }), 404, 'file_not_found');
      expectError(await sendPart(o, s, 2, Buffer.from('xyz')), 404, 'upload_not_found');
      expectError(await abort(o, s.file_id), 404, 'file_not_found');
      expect(await poll(async () => (await parts()).length === 0, { timeoutMs: 3000 })).toBe(true);
    });

    it('refuses to abort a completed file: 409 upload_completed', async () => {
      const rec = await uploadBytes(o, Buffer.from('done'));
      expectError(await abort(o, rec.file_id), 409, 'upload_completed');
      const got = await o.post('/collections/file/get', { file_id: rec.file_id });
      expect(got.status).toBe(200);
      expect(got.body.status).toBe('ready');
      expectError(await abort(o, 'no-such-file'), 404, 'file_not_found', { file_id: 'no-such-file' });
    });
  });
});

// ---------------------------------------------------------------- expiry

describe('upload expiry (COFFER_UPLOAD_TTL)', () => {
  let o: TestOrigin;
  /** The origin's time: uploads expire, and the sweeper runs, as the test moves it. */
  const clock = new ManualClock(Date.now());
  beforeAll(async () => {
    o = await startTestOrigin({ COFFER_UPLOAD_TTL: '1' }, { clock });
  });
  afterAll(async () => {
    await o.close();
  });

  it('answers 404 for an upload left open past its time and removes its parts', async () => {
    const s = await initiate(o, { size: CHUNK + 5 });
    expect(Date.parse(String(s.expires_at)) - Date.parse(String(s.created_at))).toBe(1000);
    const sent = await sendPart(o, s, 2, Buffer.from('12345'));
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await storedParts(o, s.uploadId)).toHaveLength(1);

    // A completed file is not touched by the sweeper.
    const keep = await uploadBytes(o, Buffer.from('keep me'));

    // Each ask moves the clock on, so the sweeper runs again until it has removed the upload.
    const swept = await poll(async () => {
      await clock.advance(250);
      return (await openUploadIds(o)).length === 0;
    }, { timeoutMs: 5000 });
    expect(swept, `left open: ${(await openUploadIds(o)).join(', ')}`).toBe(true);

    expectError(await sendPart(o, s, 2, Buffer.from('12345')), 404, 'upload_not_found');
    expectError(await sendPart(o, s, 1, Buffer.alloc(1)), 404, 'upload_not_found');
    expectError(await complete(o, s.file_id), 404, 'file_not_found');
    expectError(await status(o, s.file_id), 404, 'file_not_found');
    expectError(await abort(o, s.file_id), 404, 'file_not_found');

    const kept = await o.post('/collections/file/get', { file_id: keep.file_id });
    expect(kept.status).toBe(200);
    expect(kept.body.status).toBe('ready');
    expect(await storedObjectIds(o)).toContain(keep.file_id);
  }, 15_000);

  it('answers 404 once the time has passed, even before any part arrived', async () => {
    const s = await initiate(o, { size: 3 });
    await clock.advance(1100);
    expectError(await sendPart(o, s, 1, Buffer.from('abc')), 404, 'upload_not_found');
    expectError(await status(o, s.file_id), 404, 'file_not_found');
    expectError(await complete(o, s.file_id), 404, 'file_not_found');
  }, 10_000);
});
