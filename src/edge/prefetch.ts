/**
 * Prefetches the bytes of files as their completion events arrive, a few at a time, so the
 * first request for a new file is already a hit. A file changed or gone by its turn is skipped.
 */
import type { EdgeFile } from './state.js';

interface Queued {
  file: EdgeFile;
  /** False until its gate opens: a closed gate holds its own file, never the files after it. */
  open: boolean;
}

export class Prefetcher {
  private readonly queue: Queued[] = [];
  /** Files whose completion asked for a prefetch that has not started yet. */
  private readonly queued = new Set<string>();
  private running = 0;

  constructor(
    private readonly concurrency: number,
    /** Fetches the file into the cache; `stillCurrent` says whether it is still worth it. */
    private readonly fetch: (file: EdgeFile, stillCurrent: () => boolean) => Promise<unknown>,
    /** Whether this version of the file is still the one the edge knows. */
    private readonly isCurrent: (file: EdgeFile) => boolean,
    private readonly onError: (err: unknown, file: EdgeFile) => void,
  ) {}

  /** Queues a file; with `gate`, its prefetch starts only once it calls `open` (the file counts as queued meanwhile). */
  add(file: EdgeFile, gate?: (open: () => void) => void): void {
    const entry: Queued = { file, open: gate === undefined };
    this.queue.push(entry);
    this.queued.add(file.file_id);
    gate?.(() => {
      if (entry.open) return;
      entry.open = true;
      this.pump();
    });
    this.pump();
  }

  /** Whether a completion asked for this file and its prefetch has not started yet. */
  waiting(fileId: string): boolean {
    return this.queued.has(fileId);
  }

  private pump(): void {
    while (this.running < this.concurrency) {
      const at = this.queue.findIndex((q) => q.open);
      if (at < 0) return;
      const file = this.queue.splice(at, 1)[0]!.file;
      // Queued again meanwhile (a newer version): still waiting under that entry.
      if (!this.queue.some((q) => q.file.file_id === file.file_id)) this.queued.delete(file.file_id);
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
