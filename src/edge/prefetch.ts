/**
 * Prefetches the bytes of files as their completion events arrive, a few at a time, so the
 * first request for a new file is already a hit. A file changed or gone by its turn is skipped.
 */
import type { EdgeFile } from './state.js';

export class Prefetcher {
  private readonly queue: EdgeFile[] = [];
  /** Files whose completion asked for a prefetch that has not started yet. */
  private readonly queued = new Set<string>();
  private running = 0;
  /** Gates not yet opened: nothing starts while one is closed. */
  private held = 0;

  constructor(
    private readonly concurrency: number,
    /** Fetches the file into the cache; `stillCurrent` says whether it is still worth it. */
    private readonly fetch: (file: EdgeFile, stillCurrent: () => boolean) => Promise<unknown>,
    /** Whether this version of the file is still the one the edge knows. */
    private readonly isCurrent: (file: EdgeFile) => boolean,
    private readonly onError: (err: unknown, file: EdgeFile) => void,
  ) {}

  /** Queues a file; with `gate`, prefetches start only once it calls `open` (the file counts as queued meanwhile). */
  add(file: EdgeFile, gate?: (open: () => void) => void): void {
    this.queue.push(file);
    this.queued.add(file.file_id);
    if (gate) {
      this.held++;
      let opened = false;
      gate(() => {
        if (opened) return;
        opened = true;
        this.held--;
        this.pump();
      });
    }
    this.pump();
  }

  /** Whether a completion asked for this file and its prefetch has not started yet. */
  waiting(fileId: string): boolean {
    return this.queued.has(fileId);
  }

  private pump(): void {
    while (this.held === 0 && this.running < this.concurrency && this.queue.length > 0) {
      const file = this.queue.shift()!;
      this.queued.delete(file.file_id);
      if (!this.isCurrent(file)) continue;
      this.running++;
      this.fetch(file, () => this.isCurrent(file))
        .catch((err: unknown) => this.onError(err, file))
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}
