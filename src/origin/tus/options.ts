/** OPTIONS /tus and /tus/{id}: what this tus server supports, and the answer to a browser's preflight. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CHECKSUM_ALGORITHMS } from '../../service/uploads/tus-writer.js';
import { ALLOWED_HEADERS, ALLOWED_METHODS, TUS_EXTENSIONS, TUS_VERSION } from './headers.js';
import type { TusContext } from './context.js';

export const optionsSchema = {
  summary: 'tus: discover the server',
  description: 'Answers 204 with Tus-Version, Tus-Extension, Tus-Max-Size and Tus-Checksum-Algorithm, and answers browsers\' CORS preflights. Needs no credentials.',
  tags: ['tus'],
  security: [],
  response: {
    204: {
      description: 'What the server supports',
      headers: {
        'Tus-Version': { type: 'string' }, 'Tus-Extension': { type: 'string' }, 'Tus-Max-Size': { type: 'string' }, 'Tus-Checksum-Algorithm': { type: 'string' },
      },
    },
  },
};

export function handleOptions(ctx: TusContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    reply.headers({
      'Tus-Resumable': TUS_VERSION,
      'Tus-Version': TUS_VERSION,
      'Tus-Extension': TUS_EXTENSIONS.join(','),
      'Tus-Max-Size': String(ctx.service.opts.maxFileSize),
      'Tus-Checksum-Algorithm': CHECKSUM_ALGORITHMS.join(','),
    });
    if (request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined) {
      reply.headers({
        'Access-Control-Allow-Methods': ALLOWED_METHODS.join(', '),
        'Access-Control-Allow-Headers': ALLOWED_HEADERS.join(', '),
        'Access-Control-Max-Age': '86400',
      });
    }
    return reply.code(204).send();
  };
}
