/**
 * The S3 interface's HTTP face (contract §12): at the root of its own port (COFFER_S3_PORT,
 * because many S3 clients want the API at a host's root), and nowhere else: the origin that
 * hosts the Playground and its session cookie never serves user bytes (docs/security.md).
 * Every route is declared `s3`: the listeners' authentication hook (src/http/auth-hook.ts)
 * establishes the caller from the request's SigV4 signature (auth.ts) before anything else runs. Bodies are never parsed here:
 * each operation reads its request's body as a stream (payload.ts).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { CofferService } from '../service/service.js';
import { errors } from '../core/errors.js';
import type { ConnectionCaps } from '../core/listener-bounds.js';
import { installAuthentication } from '../http/auth-hook.js';
import { installListenerBounds, listenerFastifyOptions } from '../http/listener.js';
import { installRequestLog } from '../http/request-log.js';
import { s3Authenticator, targetOf, verifiedOf } from './auth.js';
import { toS3Error } from './error-map.js';
import { s3Errors } from './errors.js';
import { errorDocument } from './xml.js';
import { bucketAndKey } from './mapping.js';
import { headerMap, queryParams } from './sigv4.js';
import { Payload } from './payload.js';
import { operationOf } from './router.js';
import type { S3Answer, S3Request } from './context.js';

export interface S3RoutesOptions {
  service: CofferService;
  /** Milliseconds a request body may make no progress while it is read. */
  idleTimeoutMs: number;
}

const METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'] as const;

/** The request's path, which names the bucket and key. */
const pathOf = (raw: IncomingMessage): string => targetOf(raw).split('?')[0]!.split('#')[0]!;

/** A body as the operations read it: empty when none came, the idle timeout on while it streams. */
async function* bodyOf(request: FastifyRequest, idleTimeoutMs: number): AsyncGenerator<Buffer> {
  const source = request.body as NodeJS.ReadableStream | undefined;
  if (!source) return;
  const socket = request.raw.socket;
  socket?.setTimeout(idleTimeoutMs);
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) yield chunk;
  } finally {
    socket?.setTimeout(0);
  }
}

/** Whether a request still has body bytes unread: then its connection is not kept for another request. */
function bodyLeftUnread(raw: IncomingMessage): boolean {
  if (raw.readableEnded) return false;
  const length = raw.headers['content-length'];
  return raw.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function send(reply: FastifyReply, answer: S3Answer, head: boolean): FastifyReply {
  reply.code(answer.status ?? 200);
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  if (answer.body === undefined) return reply.send();
  if (head) {
    if (typeof answer.body !== 'string') (answer.body as Readable).destroy?.();
    return reply.send();
  }
  return reply.send(answer.body);
}

/** The S3 routes at the app's root, in a scope of their own: no body parser, XML errors. */
export async function registerS3Routes(app: FastifyInstance, opts: S3RoutesOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    scope.setErrorHandler((error, request, reply) => {
      const { bucket, key } = bucketAndKey(pathOf(request.raw));
      const uploadId = new Map(queryParams(targetOf(request.raw))).get('uploadId') ?? null;
      const err = toS3Error(error, { bucket, key, uploadId });
      if (err.status >= 500) request.log.error({ err: error }, 's3 request failed');
      // A body left unread is not waited for.
      if (bodyLeftUnread(request.raw)) reply.header('connection', 'close');
      for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
      reply.code(err.status).header('x-amz-request-id', request.id);
      if (request.method === 'HEAD') return reply.send();
      return reply.type('application/xml').send(errorDocument(err, request.id, targetOf(request.raw).split('?')[0]!));
    });

    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const raw = request.raw;
      const target = targetOf(raw);
      const { bucket, key } = bucketAndKey(pathOf(raw));
      const headers = headerMap(raw.rawHeaders);
      const query = new Map<string, string>();
      for (const [name, value] of queryParams(target)) if (!query.has(name)) query.set(name, value);
      const verified = verifiedOf(raw);
      let payload: Payload | null = null;
      const r: S3Request = {
        service: opts.service, method: request.method, bucket, key, query, headers, verified, caller: request.caller!,
        payload: () => (payload ??= new Payload(bodyOf(request, opts.idleTimeoutMs), verified, headers)),
      };
      const answer = await operationOf(r)(r);
      reply.header('x-amz-request-id', request.id);
      if (bodyLeftUnread(raw)) reply.header('connection', 'close');
      return send(reply, answer, request.method === 'HEAD');
    };
    for (const url of ['/', '/*']) {
      scope.route({ method: [...METHODS], url, exposeHeadRoute: false, config: { access: 's3' }, schema: { hide: true }, handler });
    }
  });
}

export interface S3AppOptions {
  service: CofferService;
  accessKey: string;
  rateLimit: number;
  logLevel?: string;
  logStream?: NodeJS.WritableStream;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** Connections held at once, in all and per address (default: the open-file budget of one listener). */
  connections?: ConnectionCaps;
}

/** The S3 interface on a port of its own, at its root. */
export async function buildS3App(opts: S3AppOptions): Promise<FastifyInstance> {
  const listener = {
    logLevel: opts.logLevel, logStream: opts.logStream, redact: ['req.headers.authorization', 'headers.authorization'],
    headersTimeoutMs: opts.headersTimeoutMs, idleTimeoutMs: opts.idleTimeoutMs, connections: opts.connections,
  };
  const app = Fastify({
    ...listenerFastifyOptions(listener), genReqId: () => randomBytes(8).toString('hex').toUpperCase(),
    // A path the router cannot decode (bytes that are not UTF-8) is S3's InvalidURI, in XML.
    frameworkErrors: (error, request, reply) => {
      const err = error.code === 'FST_ERR_BAD_URL' ? s3Errors.invalidUri() : toS3Error(error, {});
      const plain = reply as unknown as FastifyReply;
      plain.code(err.status).header('x-amz-request-id', request.id);
      if (request.method === 'HEAD') return void plain.send();
      void plain.type('application/xml').send(errorDocument(err, request.id, (request.raw.url ?? '/').split('?')[0]!));
    },
  });
  installListenerBounds(app, listener);
  const signed = s3Authenticator(opts.service);
  installAuthentication(app, {
    rateLimit: opts.rateLimit,
    authenticate: async (access, _headers, raw) => {
      if (access !== 's3') throw errors.forbidden('Only the S3 interface is served here.');
      return signed(raw);
    },
  });
  // The path alone: a presigned URL's query carries its signature.
  installRequestLog(app, { message: 's3 request', pathOnly: true });
  await registerS3Routes(app, { service: opts.service, idleTimeoutMs: opts.idleTimeoutMs });
  return app;
}
