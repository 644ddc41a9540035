/**
 * The origin's HTTP face: the programmatic interface of contract §2–§6, its OpenAPI
 * document and reference page. Transport only; every rule lives in the service.
 */
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { randomBytes } from 'node:crypto';
import { CofferError, errors, isCofferError } from '../core/errors.js';
import { ErrorBody } from '../core/api.js';
import { DEFAULT_SESSION_TTL_SECONDS, type CofferService } from '../service/service.js';
import { CSRF_HEADER } from './auth/session-cookie.js';
import { installAuthentication } from '../http/auth-hook.js';
import { authenticator } from './auth/caller.js';
import { registerSessionRoutes } from './session-routes.js';
import { DEFAULT_PLAYGROUND_DIR, registerPlayground } from './playground.js';
import { registerChunkRoute } from './chunk-route.js';
import { answerClientError } from '../core/client-error.js';
import { installListenerBounds, listenerFastifyOptions } from '../http/listener.js';
import type { ConnectionCaps } from '../core/listener-bounds.js';
import { installStrictJson } from './json-body.js';
import type { Endpoint } from './routes/endpoint.js';
import { registerEdgeRoutes, type EdgeRouteFeed } from './edge-routes.js';
import { installUploadCors, registerUploadPreflight } from './upload-cors.js';
import * as uploadRoutes from './routes/upload.js';
import * as folderRoutes from './routes/folders.js';
import * as fileRoutes from './routes/files.js';
import * as accessRoutes from './routes/access.js';
import * as webhookRoutes from './routes/webhooks.js';
import type { OriginMetrics } from './metrics.js';
import { registerTus } from './tus/index.js';
import { registerApiDocs } from './openapi.js';
import { installRequestLog } from '../http/request-log.js';

export const JSON_BODY_LIMIT = 64 * 1024;

export interface OriginAppOptions {
  service: CofferService;
  accessKey: string;
  baseUrl: string;
  /** The public address as it is at each request (known only after listening when the port was 0); `baseUrl` by default. */
  currentBaseUrl?: () => string;
  rateLimit: number;
  /** The process's metrics; GET /metrics is served when given. */
  metrics?: OriginMetrics;
  /** When set, GET /metrics asks for it as a Bearer token. */
  metricsToken?: string;
  logLevel?: string;
  /** A pino destination for tests; standard output by default. */
  logStream?: NodeJS.WritableStream;
  /** The delivery network's side of the origin, with the credentials edges may present. */
  edges?: EdgeRouteFeed & { tokens: string[] };
  /** Seconds a Playground session lasts (default 12 hours). */
  sessionTtlSeconds?: number;
  /** The Playground's build; by default dist/playground next to the compiled origin. */
  playgroundDir?: string;
  /** Milliseconds a client may take to send its headers (default 30 s). */
  headersTimeoutMs?: number;
  /** Milliseconds a connection may make no progress, reading a body or writing an answer, before it is dropped (default 30 s). */
  idleTimeoutMs?: number;
  /** Connections held at once, in all and per address (default: the open-file budget of one listener). */
  connections?: ConnectionCaps;
}

const ENDPOINTS: Endpoint[] = [
  uploadRoutes.initiateUpload, uploadRoutes.completeUpload, uploadRoutes.uploadStatus, uploadRoutes.abortUpload,
  folderRoutes.createFolder, folderRoutes.getFolder, folderRoutes.updateFolder, folderRoutes.deleteFolder,
  folderRoutes.list, folderRoutes.search,
  fileRoutes.getFile, fileRoutes.updateFile, fileRoutes.deleteFile, fileRoutes.downloadFile, fileRoutes.createLink, fileRoutes.usage,
  accessRoutes.createKey, accessRoutes.listKeys, accessRoutes.revokeKey, accessRoutes.createGrant, accessRoutes.revokeLinks,
  webhookRoutes.createWebhook, webhookRoutes.listWebhooks, webhookRoutes.deleteWebhook, webhookRoutes.deliveries, webhookRoutes.redeliver, webhookRoutes.testWebhook,
];

const ERROR_RESPONSES = Object.fromEntries(
  [[400, 'The body is malformed or a field is wrong'], [401, 'No key, a malformed header, or an unknown key; or a session cookie of no live session'],
    [403, 'A key without the scope the call needs, or an upload grant on another call (forbidden); a session cookie without the X-CSRF-Token of its session (csrf_failed)'], [404, 'No such id, or one outside the folder the key is confined to'],
    [409, 'The request conflicts with the current state'], [413, 'A body or a declared size over the limits'],
    [415, 'A body that is not JSON (file-progress: not JSON nor application/octet-stream)'], [429, 'Too many requests; Retry-After is set']]
    .map(([status, description]) => [status, { ...ErrorBody, description }]),
);

/** The field an AJV error is about, for details.field. */
function fieldOf(err: { instancePath?: string; params?: Record<string, unknown> }): string | undefined {
  const p = err.params ?? {};
  if (typeof p.missingProperty === 'string') return p.missingProperty;
  if (typeof p.additionalProperty === 'string') return p.additionalProperty;
  const path = (err.instancePath ?? '').replace(/^\//, '');
  return path === '' ? undefined : path.split('/')[0];
}

function toCofferError(error: FastifyError): CofferError {
  if (isCofferError(error)) return error;
  if (error.validation && error.validation.length > 0) {
    const first = error.validation[0]!;
    const field = fieldOf(first as any);
    const p = (first as any).params ?? {};
    let message: string;
    if (typeof p.missingProperty === 'string') message = `"${p.missingProperty}" is required.`;
    else if (typeof p.additionalProperty === 'string') message = `"${p.additionalProperty}" is not a field of this request.`;
    else if (field) message = `"${field}" ${first.message ?? 'is not valid'}.`;
    else message = `The body ${first.message ?? 'is not valid'}.`;
    return errors.invalidRequest(message, field);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(JSON_BODY_LIMIT);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? errors.unsupportedMediaType() : errors.invalidRequest('The Content-Length does not match the body.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidRequest('The body is empty; send a JSON object.');
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return errors.invalidRequest('The body is not valid JSON.');
  if (error.statusCode === 400) return errors.invalidRequest('The request is malformed.');
  if (error.statusCode === 413) return errors.payloadTooLarge(JSON_BODY_LIMIT);
  if (error.statusCode === 415) return errors.unsupportedMediaType();
  return errors.internal();
}

function sendError(reply: FastifyReply, err: CofferError): FastifyReply {
  if (err.status === 429) reply.header('Retry-After', String(err.details.retry_after ?? 1));
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.toBody());
}

export async function buildOriginApp(opts: OriginAppOptions): Promise<FastifyInstance> {
  const timeouts = { headersTimeoutMs: opts.headersTimeoutMs ?? 30_000, idleTimeoutMs: opts.idleTimeoutMs ?? 30_000 };
  const listener = {
    ...timeouts, logLevel: opts.logLevel, logStream: opts.logStream, connections: opts.connections,
    redact: [
      'req.headers.authorization', 'req.headers.cookie', `req.headers["${CSRF_HEADER}"]`, 'headers.authorization', 'headers.cookie', `headers["${CSRF_HEADER}"]`,
      'res.headers["set-cookie"]', 'body', 'access_key', '*.access_key', 'csrf_token', '*.csrf_token',
    ],
  };
  const app = Fastify({
    ...listenerFastifyOptions(listener),
    bodyLimit: JSON_BODY_LIMIT,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(given) ? given : randomBytes(8).toString('hex');
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    // A request Node's parser refuses gets the contract's error body, not Fastify's own.
    clientErrorHandler: (err, socket) => answerClientError(err as { code?: string }, socket),
    // A URL the router cannot decode gets the contract's error body too, not Fastify's own.
    frameworkErrors: (error, request, reply) => {
      // An address segment longer than any id (the router's 100 characters) names nothing here.
      sendError(reply, error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? errors.noRoute(request.method, request.url) : toCofferError(error));
    },
  });
  // Only JSON is a body here: without this, text/plain would be parsed and answered 400, not 415.
  app.removeContentTypeParser('text/plain');
  installStrictJson(app);
  installListenerBounds(app, listener);

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    if (closing) {
      reply.header('Connection', 'close');
      throw errors.unavailable('The service is shutting down; try again in a moment.');
    }
  });
  installUploadCors(app);
  // After the shutdown check: decided by the route the router matched, never by how the path was spelled.
  const authenticate = authenticator({ accessKey: opts.accessKey, service: opts.service, edgeTokens: opts.edges?.tokens ?? [], metricsToken: opts.metricsToken });
  installAuthentication(app, { rateLimit: opts.rateLimit, authenticate: (access, headers) => authenticate(access, headers) });
  opts.metrics?.install(app);

  installRequestLog(app);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const err = toCofferError(error);
    if (err.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, err);
  });

  app.setNotFoundHandler((request, reply) => sendError(reply, errors.noRoute(request.method, request.url)));

  registerApiDocs(app, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Coffer',
        version: '1.0.0',
        description: 'File storage and edge delivery. Every call is POST with a JSON body and "Authorization: Bearer <ACCESS_KEY>" '
          + '(or, from the Playground, its session cookie with the X-CSRF-Token header). Failures answer {"error": {"code", "message", "details"}}.',
      },
      servers: [{ url: opts.baseUrl }],
      components: {
        securitySchemes: {
          accessKey: { type: 'http', scheme: 'bearer', description: 'The access key.' },
          sessionCookie: { type: 'apiKey', in: 'cookie', name: 'coffer_session', description: 'The session cookie POST /session sets.' },
          csrfToken: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'The csrf_token of the session; required with the cookie.' },
        },
      },
      security: [{ accessKey: [] }, { sessionCookie: [], csrfToken: [] }],
    },
  });

  app.get('/healthz', { schema: { hide: true }, config: { access: 'public' } }, async () => ({ status: 'ok' }));

  const service = opts.service;
  await registerSessionRoutes(app, service, {
    accessKey: opts.accessKey, baseUrl: opts.baseUrl, ttlSeconds: opts.sessionTtlSeconds ?? DEFAULT_SESSION_TTL_SECONDS, errorResponses: ERROR_RESPONSES,
  });
  await registerPlayground(app, { dir: opts.playgroundDir ?? DEFAULT_PLAYGROUND_DIR, cdnUrl: () => service.deliveryUrl() });
  if (opts.edges) await registerEdgeRoutes(app, service, opts.edges);
  for (const e of ENDPOINTS) {
    app.post(e.path, {
      config: { access: e.access ?? 'api' },
      schema: { summary: e.summary, description: e.description, tags: [e.tag], body: e.body, response: { 200: e.response, ...ERROR_RESPONSES } },
      handler: async (request) => e.handle(service, request.body as never, request.caller!),
    });
  }

  await registerChunkRoute(app, service, ERROR_RESPONSES);
  await registerTus(app, {
    service, baseUrl: opts.currentBaseUrl ?? (() => opts.baseUrl), idleTimeoutMs: timeouts.idleTimeoutMs, errorResponses: ERROR_RESPONSES,
  });
  registerUploadPreflight(app);

  return app;
}
