/**
 * Work no request waits for (src/service/background.ts): when emptying the trash fails, because
 * the blob store refuses a delete or the database its queue, the delete that queued the blob
 * still answers 200, the origin goes on serving, the failure is logged and counted in /metrics,
 * and once the store works again a later run empties the trash without another change. The
 * failing stores are handed to the service the way it gets any store: at its construction
 * (startOrigin's wrapStores).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOrigin, uploadBytes, type TestOrigin } from '../helpers/origin.js';
import type { OriginStores } from '../../src/start/origin.js';
import { storedObjectExists } from '../helpers/stored-object.js';
import { waitFor } from '../kit/index.js';

/** A sample of GET /metrics, 0 when absent. */
async function sample(o: TestOrigin, line: RegExp): Promise<number | null> {
  const text = await (await fetch(`${o.url}/metrics`)).text();
  const found = text.split('\n').find((l) => line.test(l));
  return found === undefined ? null : Number(found.split(' ').pop());
}

/** Failures to throw, while set, from the blob store's delete and the metadata store's trash listing. */
const failing: { blobDelete?: Error | undefined; trashList?: Error | undefined } = {};

/** `store` with `method` throwing what `failure` gives, while it gives one; every other member as it is. */
function failOn<T extends object>(store: T, method: keyof T & string, failure: () => Error | undefined): T {
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (prop !== method) return fn.bind(target);
      return async (...args: unknown[]) => {
        const err = failure();
        if (err) throw err;
        return fn.apply(target, args);
      };
    },
  });
}

const failingStores = ({ meta, blobs }: OriginStores): OriginStores => ({
  meta: failOn(meta, 'pendingBlobDeletions', () => failing.trashList),
  blobs: failOn(blobs, 'delete', () => failing.blobDelete),
});

const trashFailures = (o: TestOrigin) => sample(o, /^coffer_background_failures_total\{[^}]*task="trash"/);
const failureLogs = (o: TestOrigin) => o.logs.filter((l) => l.includes('"task":"trash"') && l.includes('background trash failed'));

describe('a failing trash', () => {
  let o: TestOrigin;
  beforeAll(async () => {
    o = await startTestOrigin({}, { wrapStores: failingStores });
  });
  afterAll(async () => {
    await o?.close();
  });

  /** Serves a request of each kind while the trash cannot be emptied. */
  async function stillServes(keep: { file_id: string }): Promise<void> {
    expect((await o.post('/collections/file/get', { file_id: keep.file_id })).status).toBe(200);
    expect((await o.post('/collections/list', {})).status).toBe(200);
    const another = await uploadBytes(o, Buffer.from('uploaded meanwhile'), { name: 'meanwhile.txt' });
    expect(another.status).toBe('ready');
  }

  it('a blob store that refuses deletes: the delete answers, the origin serves, the failure is counted, a later run empties it', async () => {
    const keep = await uploadBytes(o, Buffer.from('kept'), { name: 'kept.txt' });
    const doomed = await uploadBytes(o, Buffer.from('doomed'), { name: 'doomed.txt' });
    expect(await trashFailures(o)).toBe(0);
    expect(await sample(o, /^coffer_unhandled_rejections_total/)).toBe(0);
    failing.blobDelete = new Error('the blob store is down');
    try {
      const r = await o.post('/collections/file/delete', { file_id: doomed.file_id });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ file_id: doomed.file_id, deleted: true });
      await waitFor(async () => ((await trashFailures(o)) ?? 0) >= 1, { what: 'the failure is counted', timeoutMs: 20_000 });
      await stillServes(keep);
      expect(failureLogs(o).some((l) => l.includes('the blob store is down') && l.includes('"level":50'))).toBe(true);
      expect(await storedObjectExists(o, doomed.file_id)).toBe(true);
    } finally {
      failing.blobDelete = undefined;
    }
    // No further change: the runner's retry finds the blob still queued.
    await waitFor(async () => !(await storedObjectExists(o, doomed.file_id)), { what: 'a retry removes the blob', timeoutMs: 20_000 });
    expect(await storedObjectExists(o, keep.file_id)).toBe(true);
    expect(await sample(o, /^coffer_unhandled_rejections_total/)).toBe(0);
  });

  it('a database that cannot list the trash: the same, and nothing rejects unhandled', async () => {
    const keep = await uploadBytes(o, Buffer.from('kept too'), { name: 'kept-too.txt' });
    const doomed = await uploadBytes(o, Buffer.from('doomed too'), { name: 'doomed-too.txt' });
    const before = (await trashFailures(o)) ?? 0;
    failing.trashList = new Error('the database is down');
    try {
      expect((await o.post('/collections/file/delete', { file_id: doomed.file_id })).status).toBe(200);
      await waitFor(async () => ((await trashFailures(o)) ?? 0) > before, { what: 'the failure is counted', timeoutMs: 20_000 });
      await stillServes(keep);
      expect(failureLogs(o).some((l) => l.includes('the database is down'))).toBe(true);
    } finally {
      failing.trashList = undefined;
    }
    await waitFor(async () => !(await storedObjectExists(o, doomed.file_id)), { what: 'a retry removes the blob', timeoutMs: 20_000 });
    expect(await sample(o, /^coffer_unhandled_rejections_total/)).toBe(0);
  });
});
