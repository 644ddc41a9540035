/**
 * POST /tus: creation, creation-with-upload and concatenation. POST /tus/{id} carries another
 * method in X-HTTP-Method-Override, for clients whose environment cannot send it (index.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../core/errors.js';
import { OFFSET_OCTET_STREAM, announcesBody, byteCount, checksumOf, concatOf, isOffsetStream, metadataOf, stateHeaders, uploadUrl } from './headers.js';
import { announcedLength, bodyOf, type TusContext } from './context.js';
import { stateResponseHeaders } from './docs.js';

export const postSchema = {
  summary: 'tus: create an upload',
  description: 'Upload-Length gives the size (up to Tus-Max-Size, else 413). Upload-Metadata: filename (required), visibility (Public or Private, '
    + 'default Private), folder_id, file_type (default from filetype and the name), filetype (the content type). Answers 201 with Location '
    + '({base_url}/tus/{file_id}). A body (Content-Type: application/offset+octet-stream) is the first bytes, as a PATCH at offset 0. '
    + 'Upload-Concat: partial makes a partial upload (never a file; no metadata needed); Upload-Concat: final;<url> <url>… makes the file '
    + 'of finished partial uploads, in order, and answers once it is ready. Upload grants: their limits apply here as at initiate.',
  tags: ['tus'],
  response: {
    201: { description: 'Created', headers: { Location: { type: 'string', description: '{base_url}/tus/{file_id}' }, ...stateResponseHeaders } },
  },
};

export function handlePost(ctx: TusContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.headers['upload-defer-length'] !== undefined) {
      throw errors.invalidField('invalid_header', 'Upload-Defer-Length', 'Upload-Defer-Length is not supported: send Upload-Length.');
    }
    const withBytes = isOffsetStream(request);
    if (!withBytes && announcesBody(request)) throw errors.wrongBodyType(OFFSET_OCTET_STREAM);
    const concat = concatOf(request);
    const length = byteCount(request, 'Upload-Length');
    if (length === undefined && concat?.kind !== 'final') throw errors.invalidField('invalid_header', 'Upload-Length', 'Send Upload-Length: the upload\'s size in bytes.');
    if (concat?.kind === 'final' && (length !== undefined || withBytes)) {
      throw errors.invalidField('invalid_header', 'Upload-Concat', 'A final upload takes its length and bytes from its partial uploads: send neither Upload-Length nor a body.');
    }
    const checksum = withBytes ? checksumOf(request) : null;
    const metadata = metadataOf(request);
    const caller = request.caller!;
    let state = await ctx.service.tus.create(caller, { length: length ?? null, metadata: metadata.values, rawMetadata: metadata.raw, concat });
    // Set first: an answer that fails on the bytes still tells the client where to resume.
    reply.header('Location', uploadUrl(ctx.baseUrl(), state.fileId));
    if (withBytes) state = await ctx.service.tus.write(caller, state.fileId, 0, { body: bodyOf(request, ctx.idleTimeoutMs), checksum, length: announcedLength(request) });
    return reply.code(201).headers(stateHeaders(state, ctx.baseUrl(), false)).send();
  };
}
