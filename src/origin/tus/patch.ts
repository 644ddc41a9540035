/** PATCH /tus/{id}: bytes at the upload's offset. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../core/errors.js';
import { OFFSET_OCTET_STREAM, byteCount, checksumOf, isOffsetStream, stateHeaders } from './headers.js';
import { announcedLength, bodyOf, type TusContext } from './context.js';
import { idParam, stateResponseHeaders } from './docs.js';

export const patchSchema = {
  summary: 'tus: send bytes',
  description: `The body (Content-Type: ${OFFSET_OCTET_STREAM}) continues the upload at Upload-Offset, which must be the offset HEAD gives (409 otherwise). `
    + 'Answered 204 with the new Upload-Offset once the bytes would survive a crash; a body cut off keeps what arrived. With Upload-Checksum '
    + '(sha256, sha1 or md5 of this body) a body that does not match is not kept at all (460). The answer that reaches Upload-Length comes once '
    + 'the file is ready, and names it in Coffer-File-Id. One PATCH per upload at a time: another gets 409 upload_busy.',
  tags: ['tus'],
  params: idParam,
  response: { 204: { description: 'Kept', headers: stateResponseHeaders } },
};

export function handlePatch(ctx: TusContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    if (!isOffsetStream(request)) throw errors.wrongBodyType(OFFSET_OCTET_STREAM);
    const offset = byteCount(request, 'Upload-Offset');
    if (offset === undefined) throw errors.invalidField('invalid_header', 'Upload-Offset', 'Send Upload-Offset: the offset HEAD gives.');
    const checksum = checksumOf(request);
    const state = await ctx.service.tus.write(request.caller!, id, offset, { body: bodyOf(request, ctx.idleTimeoutMs), checksum, length: announcedLength(request) });
    return reply.code(204).headers(stateHeaders(state, ctx.baseUrl(), false)).send();
  };
}
