/**
 * `POST /collections/upload/file-progress`: one route, two body readers. A JSON body
 * (`application/json`, base64 in `body`, fields in any order) is decoded as it arrives; a
 * raw body (`application/octet-stream`, fields in the query string) is the part's bytes.
 * Either way the bytes stream into the part's writer and the service takes it from there,
 * with the same answers, errors, limits and durability.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';
import { UploadPartRequest, UploadPartResponse } from '../core/api.js';
import type { PartWriter } from '../core/ports.js';
import type { CofferService } from '../service/service.js';
import { readChunkBody } from './chunk-body.js';
import { partFieldsOf, readRawBody } from './raw-part.js';

export const CHUNK_BODY_LIMIT = 8 * 1024 * 1024;
export const CHUNK_PATH = '/collections/upload/file-progress';

/** What the chunk route's body parsers leave for its handler: a JSON chunk's writer, or a raw part's (null when it names no valid part). */
type ChunkPart = { form: 'json'; writer: PartWriter; invalidBase64: boolean } | { form: 'raw'; writer: PartWriter | null };

declare module 'fastify' {
  interface FastifyRequest {
    /** The part writer the chunk route's parser opened, until the handler commits it; null elsewhere. */
    chunkPart: ChunkPart | null;
  }
}

const declaredLength = (request: FastifyRequest): number | undefined => {
  const length = request.headers['content-length'];
  return length === undefined ? undefined : Number(length);
};

const RAW_FIELDS: Array<[string, string]> = [
  ['bucket', 'The upload session\'s "bucket".'], ['key', 'The upload session\'s "key".'], ['uploadId', 'The upload session\'s "uploadId".'],
  ['fileId', 'The upload session\'s "fileId".'], ['partNumber', 'An integer from 1 to part_count.'],
];

const DESCRIPTION = 'One part of an upload, in either of two forms. JSON (`Content-Type: application/json`): the fields below, the part base64 in "body", '
  + 'in any order. Raw (`Content-Type: application/octet-stream`): the part\'s bytes are the body and bucket, key, uploadId, fileId and partNumber '
  + 'are query parameters (required in this form). Every part but the last is exactly chunk_size bytes. Parts may arrive in any order and in parallel; '
  + 'sending a part again replaces it. The body may be up to 8 MiB. The answer comes once the part will survive a crash of the origin.';

/** The OpenAPI document shows both forms; validation only knows the JSON one (the raw form is checked by its reader). */
function documentBothForms({ schema, url }: { schema: Record<string, any>; url: string }): { schema: Record<string, any>; url: string } {
  return {
    url,
    schema: {
      ...schema,
      querystring: {
        type: 'object',
        properties: Object.fromEntries(RAW_FIELDS.map(([name, description]) => [name, { type: 'string', description: `Raw form only (required there). ${description}` }])),
      },
      body: {
        content: {
          ...schema.body.content,
          'application/octet-stream': { schema: { type: 'string', format: 'binary', description: 'The part\'s bytes (raw form).' } },
        },
      },
    },
  };
}

export async function registerChunkRoute(app: FastifyInstance, service: CofferService, errorResponses: Record<string, unknown>): Promise<void> {
  // A scope of its own: its body parsers read streams, unlike every other route's.
  await app.register(async (scope) => {
    scope.decorateRequest('chunkPart', null);
    // A part the handler did not commit (refused, failed, cut off) is discarded, not left half-written.
    scope.addHook('onResponse', async (request) => {
      await request.chunkPart?.writer?.discard().catch(() => {});
    });
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', async (request: FastifyRequest, payload: NodeJS.ReadableStream) => {
      const body = await readChunkBody(payload as AsyncIterable<Buffer>, (fields) => service.uploads.openPartWriter(request.caller!, fields), CHUNK_BODY_LIMIT, declaredLength(request));
      if (body.writer) request.chunkPart = { form: 'json', writer: body.writer, invalidBase64: body.invalidBase64 };
      return body.fields;
    });
    scope.addContentTypeParser('application/octet-stream', async (request: FastifyRequest, payload: NodeJS.ReadableStream) => {
      const source = payload as AsyncIterable<Buffer>;
      let fields;
      try {
        fields = partFieldsOf(request.query);
      } catch (err) {
        // Malformed: answered once the body is read, as the JSON form is (413 still comes first).
        await readRawBody(source, null, CHUNK_BODY_LIMIT, declaredLength(request));
        throw err;
      }
      const length = declaredLength(request);
      if (length !== undefined && length > CHUNK_BODY_LIMIT) throw errors.payloadTooLarge(CHUNK_BODY_LIMIT);
      const writer = await service.uploads.raw.open(request.caller!, fields);
      try {
        await readRawBody(source, writer, CHUNK_BODY_LIMIT, length);
      } catch (err) {
        await writer?.discard().catch(() => {});
        throw err;
      }
      request.chunkPart = { form: 'raw', writer };
      return fields;
    });
    scope.post(CHUNK_PATH, {
      config: { access: 'upload', swaggerTransform: documentBothForms },
      bodyLimit: CHUNK_BODY_LIMIT,
      schema: {
        summary: 'Upload one chunk',
        description: DESCRIPTION,
        tags: ['Upload'],
        body: { content: { 'application/json': { schema: UploadPartRequest } } },
        response: { 200: UploadPartResponse, ...errorResponses },
      },
      handler: async (request) => {
        const fields = request.body as { bucket: string; key: string; uploadId: string; fileId: string; partNumber: number };
        const part = request.chunkPart;
        if (!part) throw errors.invalidRequest('"body" must be a string.', 'body');
        if (part.form === 'raw') return service.uploads.raw.receive(request.caller!, fields, part.writer);
        return service.uploads.receivePart({ ...fields, caller: request.caller!, writer: part.writer, invalidBase64: part.invalidBase64 });
      },
    });
  });
}
