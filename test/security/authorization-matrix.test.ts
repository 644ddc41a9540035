/**
 * The one authorization decision, held from outside (issue: one lock for every dialect): every
 * operation of every dialect (the JSON interface, raw parts, tus, sessions, the edges' routes,
 * the open routes, S3) × every kind of caller (root, session, keys of each scope, confined keys,
 * a grant, revoked and expired keys and the children of such) × a target inside and outside the
 * confined callers' folder, against the table in matrix/expected.ts. An operation the origin or
 * the S3 router has without a row here fails the first test.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { S3_OPERATIONS } from '../../src/s3/router.js';
import { startTestOrigin, type TestOrigin } from '../helpers/origin.js';
import { makeCallers, type MatrixCaller, type Place } from './matrix/callers.js';
import { makeCtx, type Ctx } from './matrix/context.js';
import { allowed, NEEDS, refusalStatuses, type Cell } from './matrix/expected.js';
import { HTTP_OPERATIONS, type Operation } from './matrix/http-operations.js';
import { closeS3Clients, s3Operations, type S3World } from './matrix/s3-operations.js';

let o: TestOrigin;
let ctx: Ctx;
let callers: MatrixCaller[];
let world: S3World;
const OPERATIONS: Operation[] = [...HTTP_OPERATIONS, ...s3Operations(() => world)];
const PLACES: Place[] = ['in', 'out'];

beforeAll(async () => {
  o = await startTestOrigin({ COFFER_WEBHOOK_ALLOW_PRIVATE: '1' });
  const top = async (name: string) => {
    const made = await o.post('/collections/folder/create', { name, visibility: 'Private' });
    if (made.status !== 200) throw new Error(`folder/create: ${made.status}`);
    return made.body.folder_id as string;
  };
  const places = { in: await top('matrix-in'), out: await top('matrix-out') };
  ctx = makeCtx(o, places, o.origin.s3Url);
  const made = await makeCallers(o, places);
  callers = made.callers;
  const maker = await o.post('/collections/keys/create', { name: 'matrix-s3-maker', scopes: ['read', 'write'] });
  world = { bucket: { in: 'matrix-in', out: 'matrix-out' }, maker: { keyId: maker.body.key_id, secret: maker.body.key } };
  // The keys made to expire in a second have expired once this has passed.
  await new Promise((r) => setTimeout(r, made.deadAfterMs));
}, 120_000);

afterAll(async () => {
  closeS3Clients();
  await o?.close();
});

describe('every operation has a row', () => {
  test('every route the origin declares is an operation of the matrix', () => {
    const covered = new Set(OPERATIONS.map((op) => op.route));
    const declared = new Set(o.origin.app.declaredRoutes.map((r) => `${r.method} ${r.url}`));
    // The HEAD route Fastify adds beside a GET takes its declaration and handler.
    const missing = o.origin.app.declaredRoutes
      .map((r) => `${r.method === 'HEAD' && declared.has(`GET ${r.url}`) ? 'GET' : r.method} ${r.url}`)
      .filter((route) => !covered.has(route));
    expect([...new Set(missing)]).toEqual([]);
  });

  test('every operation of the S3 router is an operation of the matrix, and every row names a real operation', () => {
    const names = new Set(OPERATIONS.filter((op) => op.dialect === 's3').map((op) => op.route));
    expect([...names].sort()).toEqual(Object.keys(S3_OPERATIONS).sort());
    const declared = new Set(o.origin.app.declaredRoutes.map((r) => `${r.method} ${r.url}`));
    for (const op of OPERATIONS.filter((x) => x.dialect !== 's3')) expect(declared.has(op.route), op.route).toBe(true);
    for (const op of OPERATIONS) expect(NEEDS[op.need], op.name).toBeDefined();
  });
});

/** Runs cells a few at a time: each makes its own targets. */
async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<string | null>): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < items.length; i += size) {
    for (const r of await Promise.all(items.slice(i, i + size).map(run))) if (r !== null) out.push(r);
  }
  return out;
}

/** A mismatch between the answer and the table, as a line; null when they agree. */
async function judge(op: Operation, caller: MatrixCaller, place: Place): Promise<string | null> {
  const cell: Cell = { need: op.need, target: op.target, s3: op.dialect === 's3', caller, place };
  const want = allowed(cell);
  let status: number;
  try {
    // A cell that hangs is a finding of its own, not a stalled suite.
    status = await Promise.race([op.run(ctx, caller, place), new Promise<never>((_, fail) => setTimeout(() => fail(new Error('no answer in 20 s')), 20_000).unref())]);
  } catch (err) {
    return `${op.name} as ${caller.name} on ${place}: ${(err as Error).message}`;
  }
  const publicNeed = NEEDS[op.need].kind === 'public';
  const ok = want
    ? (publicNeed ? status !== 401 && status !== 403 : status >= 200 && status < 300)
    : refusalStatuses(cell).includes(status);
  return ok ? null : `${op.name} as ${caller.name} on ${place}: ${status}, expected ${want ? 'allowed' : `refused (${refusalStatuses(cell).join('/')})`}`;
}

const DIALECTS = (process.env.MATRIX_DIALECTS?.split(',') ?? ['json', 'raw', 'tus', 'session', 'edge', 'open', 's3']) as Operation['dialect'][];

describe.each(DIALECTS)('the %s dialect', (dialect) => {
  test('answers every caller as the table says, inside and outside its reach', async () => {
    const ops = OPERATIONS.filter((op) => op.dialect === dialect);
    expect(ops.length).toBeGreaterThan(0);
    const cells = ops.flatMap((op) => callers.flatMap((c) => (op.target === 'none' ? ['in' as Place] : PLACES).map((place) => ({ op, c, place }))));
    const wrong = await inBatches(cells, 6, ({ op, c, place }) => judge(op, c, place));
    expect(wrong).toEqual([]);
  }, 600_000);
});
