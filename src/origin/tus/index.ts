/**
 * tus 1.0.0 at {base_url}/tus (contract §9), on the service's upload engine: one module per
 * method, registered here in a scope of their own, where every answer carries Tus-Resumable
 * and the CORS headers browsers need, and bodies are left for the handlers to stream.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../core/errors.js';
import { EXPOSED_HEADERS, TUS_VERSION, announcesBody, checkTusResumable, header } from './headers.js';
import type { TusContext } from './context.js';
import { handleOptions, optionsSchema } from './options.js';
import { handlePost, postSchema } from './post.js';
import { handleHead, headSchema } from './head.js';
import { handlePatch, patchSchema } from './patch.js';
import { deleteSchema, handleDelete } from './delete.js';
import { idParam } from './docs.js';

export type { TusContext } from './context.js';

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/** The error answers a tus route may give, for the OpenAPI document. */
function errorAnswers(ctx: TusContext, statuses: number[]): Record<number, unknown> {
  const described: Record<number, string> = {
    410: 'An upload past its Upload-Expires, not yet removed', 412: 'No "Tus-Resumable: 1.0.0" (the answer carries Tus-Version)',
    460: 'The body does not match Upload-Checksum; none of it was kept',
  };
  const sample = ctx.errorResponses[400] as Record<string, unknown>;
  return Object.fromEntries(statuses.map((s) => [s, ctx.errorResponses[s] ?? { ...sample, description: described[s] }]));
}

export async function registerTus(app: FastifyInstance, ctx: TusContext): Promise<void> {
  await app.register(async (scope) => {
    // Bodies are the upload's bytes, streamed by the handlers; whatever the type, the handler answers it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));

    scope.addHook('onRequest', async (request, reply) => {
      if (request.method === 'OPTIONS') return;
      try {
        checkTusResumable(request);
      } catch (err) {
        reply.header('Tus-Version', TUS_VERSION);
        throw err;
      }
    });
    // On every answer, refusals of the authentication hook included.
    scope.addHook('onSend', async (request, reply) => {
      reply.header('Tus-Resumable', TUS_VERSION);
      if (request.headers.origin !== undefined) {
        // Credentials travel in Authorization, never in cookies a wildcard would let through.
        reply.header('Access-Control-Allow-Origin', '*');
        reply.header('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(', '));
      }
      // The bytes of a request answered before its body was read are not waited for.
      if (announcesBody(request) && !request.raw.complete) reply.header('Connection', 'close');
    });

    const upload = (statuses: number[]) => errorAnswers(ctx, [400, 401, 403, 404, 409, 410, 412, 413, 415, 429, 460].filter((s) => statuses.includes(s)));
    scope.options('/tus', { config: { access: 'public' }, schema: optionsSchema }, handleOptions(ctx));
    scope.options('/tus/:id', { config: { access: 'public' }, schema: { ...optionsSchema, params: idParam } }, handleOptions(ctx));
    scope.post('/tus', {
      config: { access: 'upload' },
      schema: { ...postSchema, response: { ...postSchema.response, ...upload([400, 401, 403, 404, 409, 410, 412, 413, 415, 429, 460]) } },
    }, handlePost(ctx));
    const head = handleHead(ctx);
    const patch = handlePatch(ctx);
    const remove = handleDelete(ctx);
    scope.route({
      // Listed in the OpenAPI document, unlike the HEAD routes Fastify adds to GET ones.
      method: 'HEAD', url: '/tus/:id', config: { access: 'upload', swagger: { exposeHeadRoute: true } },
      schema: { ...headSchema, response: { ...headSchema.response, ...upload([400, 401, 403, 404, 410, 412, 429]) } }, handler: head,
    });
    scope.patch('/tus/:id', {
      config: { access: 'upload' },
      schema: { ...patchSchema, response: { ...patchSchema.response, ...upload([400, 401, 403, 404, 409, 410, 412, 413, 415, 429, 460]) } },
    }, patch);
    scope.delete('/tus/:id', {
      config: { access: 'upload' },
      schema: { ...deleteSchema, response: { ...deleteSchema.response, ...upload([400, 401, 403, 404, 409, 410, 412, 429]) } },
    }, remove);
    const overridden: Record<string, Handler> = { HEAD: head, PATCH: patch, DELETE: remove };
    scope.post('/tus/:id', {
      config: { access: 'upload' },
      schema: {
        summary: 'tus: another method, through POST',
        description: 'X-HTTP-Method-Override: PATCH, HEAD or DELETE makes this POST that request, for clients that cannot send those methods.',
        tags: ['tus'],
        params: idParam,
        response: { 200: headSchema.response[200], 204: patchSchema.response[204], ...upload([400, 401, 403, 404, 409, 410, 412, 413, 415, 429, 460]) },
      },
    }, async (request, reply) => {
      const method = header(request, 'X-HTTP-Method-Override')?.trim().toUpperCase();
      const handler = method === undefined ? undefined : overridden[method];
      if (!handler) throw errors.invalidField('invalid_header', 'X-HTTP-Method-Override', 'POST to an upload needs X-HTTP-Method-Override: PATCH, HEAD or DELETE.');
      return handler(request, reply);
    });
  });
}
