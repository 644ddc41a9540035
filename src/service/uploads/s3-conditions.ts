/**
 * S3's conditional writes (contract §12): a PutObject or CompleteMultipartUpload that names a
 * condition on the object it replaces (If-None-Match: *, If-Match: ETag). The dialect judges
 * the condition and makes its errors; this decides when: once before the parts are joined,
 * and again in the transaction that makes the new file ready, so nothing else can become the
 * key's object between the last check and the commit. Conditional writes of one key run one
 * at a time among every origin sharing the store, so of two racing ones the second is judged
 * against the first's object.
 */
import { KeyedQueue } from '../../core/coalesce.js';
import { errors } from '../../core/errors.js';
import type { MetadataTx, StoredFile } from '../../core/ports.js';
import type { ServiceContext } from '../context.js';
import type { PartsPolicy } from './join.js';

/** When a condition is judged: before the bytes are joined, or in the commit that makes the object visible. */
export type ConditionPhase = 'check' | 'commit';

export interface WriteCondition {
  /**
   * Throws (an error of the dialect's) when the write must not go on; `current` is the key's
   * object now (the newest ready file of the name), or null.
   */
  judge(current: StoredFile | null, phase: ConditionPhase): void;
}

/** How long a conditional write waits for another one of its key in another process. */
const WAIT_LIMIT_MS = 120_000;

/** Per service, conditional writes waiting in this process, by key. */
const queues = new WeakMap<ServiceContext, KeyedQueue<string>>();

const lockName = (folderId: string | null, name: string) => `s3-write:${folderId ?? ''}/${name}`;

/** The key's object now: the newest ready file of the name that is not `except`. */
export async function currentObject(tx: MetadataTx, folderId: string | null, name: string, except?: string): Promise<StoredFile | null> {
  const files = await tx.s3.filesNamed(folderId, name);
  return files.find((f) => f.id !== except) ?? null;
}

/**
 * Runs `fn` while no other conditional write of this key runs in any process sharing the
 * store. Waiters in this process queue in memory; across processes the lock is tried, not
 * waited on, so a waiter holds no connection another write needs.
 */
export async function oneWriterOfKey<T>(c: ServiceContext, folderId: string | null, name: string, fn: () => Promise<T>): Promise<T> {
  let queue = queues.get(c);
  if (!queue) {
    queue = new KeyedQueue<string>();
    queues.set(c, queue);
  }
  const lock = lockName(folderId, name);
  return queue.run(lock, async () => {
    const until = Date.now() + WAIT_LIMIT_MS;
    for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
      const tried = await c.meta.tryExclusive(lock, fn);
      if (tried.ran) return tried.value;
      if (Date.now() > until) throw errors.unavailable('Another conditional write of this key is taking long; try again.');
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  });
}

/**
 * The policy `base` with the condition judged before the join and in the commit. `failed`
 * learns when the commit refused: the parts were joined by then, so the upload cannot be
 * completed again and its caller removes it.
 */
export function conditional(c: ServiceContext, base: PartsPolicy, condition: WriteCondition, failed: { atCommit: boolean }): PartsPolicy {
  return {
    ...base,
    async check(file) {
      await base.check?.(file);
      // Outside a transaction: the lock of oneWriterOfKey keeps other conditional writes out meanwhile.
      condition.judge(await currentObject(c.meta.read, file.folder_id, file.name, file.id), 'check');
    },
    async onReady(tx, ready) {
      try {
        condition.judge(await currentObject(tx, ready.folder_id, ready.name, ready.id), 'commit');
      } catch (err) {
        failed.atCommit = true;
        throw err;
      }
      await base.onReady?.(tx, ready);
    },
  };
}
