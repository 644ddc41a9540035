/**
 * What edges call on the origin, under /_edge/: the event feed, acknowledgements, a
 * snapshot to start from, a file's record for a re-check, and the bytes. Edges present
 * their own credential, never the access key; every route here declares `edge`, which the
 * origin's authentication checks (src/origin/auth/). HTTP only: the feed (src/feed/) decides.
 */
import type { FastifyInstance } from 'fastify';
import { errors, fail } from '../core/errors.js';
import { SANDBOX_CSP } from '../core/user-bytes.js';
import type { CofferService } from '../service/service.js';
import type { EdgeHub } from '../feed/hub.js';
import type { EdgeRecords } from '../feed/records.js';
import { parseEdgeStatus, type EdgeStatus } from '../feed/edge-status.js';
import { registerEdgesList } from './routes/edges.js';

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The feed's side of the routes. */
export interface EdgeRouteFeed {
  hub: EdgeHub;
  records: EdgeRecords;
}

export async function registerEdgeRoutes(root: FastifyInstance, service: CofferService, feed: EdgeRouteFeed): Promise<void> {
  await root.register(async (app) => edgeRoutes(app, service, feed));
  registerEdgesList(root, feed.hub.fleet);
}

function edgeRoutes(app: FastifyInstance, service: CofferService, { hub, records }: EdgeRouteFeed): void {
  const hidden = { hide: true };
  const edge = { access: 'edge' as const };

  app.get('/_edge/feed', { schema: hidden, config: edge }, (request, reply) => {
    const q = request.query as Record<string, string | undefined>;
    const after = Number(q.after ?? 0);
    const edge = q.edge ?? '';
    if (!Number.isSafeInteger(after) || after < 0 || !ID.test(edge)) throw errors.invalidRequest('feed needs ?after=<seq>&edge=<id>.');
    reply.hijack();
    hub.attach(edge, after, reply.raw);
  });

  app.post('/_edge/ack', { schema: hidden, config: edge }, async (request) => {
    const body = request.body as { edge?: unknown; seq?: unknown } | undefined;
    if (!body || typeof body.edge !== 'string' || !ID.test(body.edge) || typeof body.seq !== 'number' || !Number.isSafeInteger(body.seq)) {
      throw errors.invalidRequest('ack needs {"edge": id, "seq": n}.');
    }
    return await hub.ack(body.edge, body.seq);
  });

  // The same acknowledgements as JSON lines on one long request, renewals answered on the feed
  // (src/feed/ack-stream.ts). The body is read as it comes, never gathered.
  app.addContentTypeParser('application/x-ndjson', (_request, _payload, done) => done(null));
  app.post('/_edge/acks', { schema: hidden, config: edge }, (request, reply) => {
    const id = (request.query as Record<string, string | undefined>).edge ?? '';
    if (!ID.test(id)) throw errors.invalidRequest('acks needs ?edge=<id>.');
    if (request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== 'application/x-ndjson') {
      throw fail('unsupported_media_type', 'Send acknowledgements as "Content-Type: application/x-ndjson".');
    }
    if (!hub.hasStream(id)) throw fail('edge_feed_elsewhere');
    reply.hijack();
    hub.takeAcks(id, request.raw, reply.raw);
  });

  // What an edge served since its last report, summed per file: counted by the origin per day.
  // With it, optionally, the edge's report of itself (`edge`), kept for the edges list.
  app.post('/_edge/usage', { schema: hidden, config: edge, bodyLimit: 4 * 1024 * 1024 }, async (request) => {
    const body = request.body as { files?: unknown; edge?: unknown } | undefined;
    let status: EdgeStatus | undefined;
    if (body?.edge !== undefined) {
      const parsed = parseEdgeStatus(body.edge);
      if (typeof parsed === 'string') throw errors.invalidRequest(`usage's ${parsed}.`, 'edge');
      status = parsed;
    }
    const files = body?.files;
    if (!files || typeof files !== 'object' || Array.isArray(files)) throw errors.invalidRequest('usage needs {"files": {id: [downloads, bytes]}}.');
    const reports = [];
    for (const [id, value] of Object.entries(files as Record<string, unknown>)) {
      if (!ID.test(id) || !Array.isArray(value) || value.length !== 2 || !value.every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) {
        throw errors.invalidRequest('usage needs {"files": {id: [downloads, bytes]}} with whole, non-negative counts.');
      }
      reports.push({ file_id: id, downloads: value[0] as number, bytes: value[1] as number });
    }
    await service.usage.record(reports);
    if (status) await hub.fleet.record(status);
    return { recorded: reports.length };
  });

  app.get('/_edge/snapshot', { schema: hidden, config: edge }, async () => await records.snapshot());

  app.get('/_edge/file/:id', { schema: hidden, config: edge }, async (request) => {
    const { id } = request.params as { id: string };
    const found = ID.test(id) ? await records.file(id) : undefined;
    if (!found) throw errors.notFound('No such file.');
    return { ...found, seq: hub.headSeq };
  });

  app.get('/_edge/blob/:id', { schema: hidden, config: edge }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const blob = ID.test(id) ? await records.blob(id) : undefined;
    if (!blob) throw errors.notFound('No such file.');
    // Edge-token only, never for a browser; should one reach it, the bytes are inert all the same.
    reply.header('Content-Type', 'application/octet-stream');
    reply.header('X-Content-Type-Options', 'nosniff').header('Content-Security-Policy', SANDBOX_CSP).header('Cache-Control', 'no-store');
    reply.header('Content-Length', String(blob.size));
    reply.header('X-Sha256', blob.sha256 ?? '');
    return reply.send(blob.body);
  });
}
