/** HEAD /tus/{id}: where an upload stands (its offset), to resume it. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stateHeaders } from './headers.js';
import type { TusContext } from './context.js';
import { idParam, stateResponseHeaders } from './docs.js';

export const headSchema = {
  summary: 'tus: the offset of an upload',
  description: 'Answers 200 with Upload-Offset (the bytes kept so far), Upload-Length, Upload-Expires while unfinished, Upload-Metadata and '
    + 'Upload-Concat as given at creation, and Coffer-File-Id once the file is ready. An upload whose bytes are all in is made ready first. '
    + '404 for an unknown or terminated upload, 410 for an expired one not yet removed.',
  tags: ['tus'],
  params: idParam,
  response: { 200: { description: 'The upload', headers: stateResponseHeaders } },
};

export function handleHead(ctx: TusContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    const state = await ctx.service.tus.state(request.caller!, id);
    return reply.code(200).headers({ ...stateHeaders(state, ctx.baseUrl(), true), 'Cache-Control': 'no-store' }).send();
  };
}
