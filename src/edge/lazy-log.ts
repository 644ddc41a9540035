/**
 * The edge's log: pino, loaded at the first line an edge logs. An edge logs only what goes
 * wrong (a failed fill, a cap reached), so most never load pino and its streams, about
 * 0.7 MB of each edge process. Lines logged while pino loads are written once it has, in
 * order, each with the time it was logged.
 */
import type { Logger, LoggerOptions } from 'pino';

type Level = 'error' | 'warn' | 'info' | 'debug';
type Args = [obj: unknown, msg?: string];

const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/** What the edge's modules log with: pino's methods they use. */
export type EdgeLog = Pick<Logger, Level>;

export function lazyLog(options: LoggerOptions, stream?: NodeJS.WritableStream): EdgeLog {
  let logger: Logger | null = null;
  let waiting: Array<{ level: Level; args: Args; time: number }> = [];
  /** The time of the line being written from `waiting`, else null: the time is now. */
  let replaying: number | null = null;

  async function load(): Promise<void> {
    const { default: pino } = await import('pino');
    const timestamp = () => `,"time":${replaying ?? Date.now()}`;
    const loaded = pino({ ...options, timestamp }, stream ?? pino.destination(1));
    for (const line of waiting) {
      replaying = line.time;
      (loaded[line.level] as (...a: Args) => void)(...line.args);
    }
    replaying = null;
    waiting = [];
    logger = loaded;
  }

  // A line below the level is dropped here: it must not load pino.
  const least = LEVELS[options.level ?? 'info'] ?? LEVELS.info!;
  const write = (level: Level) => (...args: Args): void => {
    if (LEVELS[level]! < least) return;
    if (logger) {
      (logger[level] as (...a: Args) => void)(...args);
      return;
    }
    if (waiting.push({ level, args, time: Date.now() }) === 1) {
      load().catch((err: unknown) => process.stderr.write(`the edge's log could not be loaded: ${(err as Error).message}\n`));
    }
  };
  return { error: write('error'), warn: write('warn'), info: write('info'), debug: write('debug') } as EdgeLog;
}
