/**
 * Unhandled promise rejections, told to every origin and edge in the process. Node ends a
 * process on one unless someone listens; listening here keeps it serving, so each must be
 * logged and counted (`coffer_unhandled_rejections_total`) rather than pass silently.
 * One listener per process serves all watchers: tests start many origins in one process.
 */
type Watcher = (reason: unknown) => void;

interface Listening {
  watchers: Set<Watcher>;
  listener: (reason: unknown) => void;
}

const listening = new Map<NodeJS.EventEmitter, Listening>();

/** Tells `watch` of each unhandled rejection until the returned function is called; `proc` is a stand-in in tests. */
export function watchUnhandledRejections(watch: Watcher, proc: NodeJS.EventEmitter = process): () => void {
  let l = listening.get(proc);
  if (!l) {
    const watchers = new Set<Watcher>();
    const listener = (reason: unknown): void => {
      for (const w of watchers) {
        try {
          w(reason);
        } catch {
          // One broken watcher must not keep the others from hearing.
        }
      }
    };
    l = { watchers, listener };
    listening.set(proc, l);
    proc.on('unhandledRejection', listener);
  }
  // Its own entry, so one function watching twice is told twice and unwatched once each.
  const entry: Watcher = (reason) => watch(reason);
  const current = l;
  current.watchers.add(entry);
  return () => {
    current.watchers.delete(entry);
    if (current.watchers.size === 0 && listening.get(proc) === current) {
      listening.delete(proc);
      proc.off('unhandledRejection', current.listener);
    }
  };
}
