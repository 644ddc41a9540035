/**
 * POST /collections/edges: every edge the origins know, for the root key and its Playground
 * sessions (docs/api.md "Edges"). The feed's fleet (feed/fleet.ts) answers; policy.ts decides who asks.
 */
import type { FastifyInstance } from 'fastify';
import { EdgesRequest, EdgesResponse } from '../../core/api-edges.js';
import { ErrorBody } from '../../core/api.js';
import { errors } from '../../core/errors.js';
import type { EdgeFleet } from '../../feed/fleet.js';
import { authorize } from '../../service/policy.js';

const REFUSALS = {
  400: { ...ErrorBody, description: 'The body is not an empty object or null' },
  401: { ...ErrorBody, description: 'No key, a malformed header, or an unknown key; or a session cookie of no live session' },
  403: { ...ErrorBody, description: 'Any key but the root key, or an upload grant (forbidden); a session cookie without its X-CSRF-Token (csrf_failed)' },
  429: { ...ErrorBody, description: 'Too many requests; Retry-After is set' },
};

export function registerEdgesList(app: FastifyInstance, fleet: EdgeFleet): void {
  app.post('/collections/edges', {
    config: { access: 'api' },
    schema: {
      summary: 'List the edges',
      description: 'Every edge any origin sharing this store has heard from in the last hour: name, parents, whether it answers '
        + '(live, catching_up; lapsed, unreachable), when it was last seen, its lease, how far it lags behind the feed, its cache, '
        + 'hit ratio, requests and bytes since it started. The root key or a Playground session only.',
      tags: ['Edges'],
      body: EdgesRequest,
      response: { 200: EdgesResponse, ...REFUSALS },
    },
  }, async (request) => {
    const caller = request.caller;
    if (!caller) throw errors.unauthorized();
    authorize(caller, 'edges.read');
    return await fleet.list();
  });
}
