/** DELETE /tus/{id} (termination): discards an unfinished upload and its bytes. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TusContext } from './context.js';
import { idParam } from './docs.js';

export const deleteSchema = {
  summary: 'tus: terminate an upload',
  description: 'Discards an unfinished upload and every byte of it; its URL then answers 404. A finished upload is a file: '
    + '409 upload_completed (delete it with /collections/file/delete).',
  tags: ['tus'],
  params: idParam,
  response: { 204: { description: 'Terminated' } },
};

export function handleDelete(ctx: TusContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    await ctx.service.tus.terminate(request.caller!, id);
    return reply.code(204).send();
  };
}
