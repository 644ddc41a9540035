/**
 * Progress of long command-line work on standard error: on a terminal, a live bar per
 * file and one overall, redrawn in place; otherwise plain lines a log can keep.
 */
import { formatBytes, formatDuration, formatRate, safeText, shorten } from './format.js';

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  /** Redraw in place (a terminal) or print plain lines. */
  live: boolean;
  /** Past tense for lines: "uploaded", "downloaded". */
  verb: string;
  /** Files expected in all, for the overall line; 0 hides it. */
  files?: number;
  /** How often plain mode may report a running task (default 5 s). */
  plainEveryMs?: number;
  now?: () => number;
}

const BAR = 20;
const REDRAW_MS = 100;
/**
 * No estimate before this long and this many bytes: the first parts' rate says more about
 * connection set-up than about the transfer, and "3h left" for a minute's work misleads.
 */
export const ETA_AFTER_MS = 1000;
export const ETA_AFTER_BYTES = 1024 * 1024;
/** Room for "59m59s left" or "99h59m left", so every line's tail has one width. */
const ETA_WIDTH = 12;
/** "1023.9 MiB/s". */
const RATE_WIDTH = 12;

function bar(fraction: number, width = BAR): string {
  const filled = Math.max(0, Math.min(width, Math.round(fraction * width)));
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

export interface Sample {
  bytes: number;
  ms: number;
}

/** "2m05s left" once the sample is long and large enough to say, else nothing. */
export function etaText(sample: Sample, remaining: number): string {
  if (sample.ms < ETA_AFTER_MS || sample.bytes < ETA_AFTER_BYTES || remaining <= 0) return '';
  return `${formatDuration(remaining / (sample.bytes / (sample.ms / 1000)))} left`;
}

const percent = (loaded: number, total: number) => (total === 0 ? 100 : Math.floor((loaded / total) * 100));

export class Task {
  loaded = 0;
  /** Bytes present before this run began (a resumed upload); not counted in the speed. */
  private base = 0;
  readonly started: number;
  lastPlain: number;

  constructor(private readonly view: Progress, readonly label: string, public total: number) {
    this.started = view.now();
    this.lastPlain = this.started;
  }

  /** Sets the bytes done so far; the first call may report bytes already there. */
  update(loaded: number, opts: { initial?: boolean } = {}): void {
    if (opts.initial) this.base = loaded;
    this.view.moved(loaded - this.loaded, opts.initial === true);
    this.loaded = loaded;
    this.view.changed(this);
  }

  /** Bytes sent in this run, and for how long: what an estimate may rest on. */
  sample(now: number): Sample {
    return { bytes: this.loaded - this.base, ms: now - this.started };
  }

  done(detail = ''): void {
    this.update(this.total);
    this.view.finish(this, `${this.view.opts.verb} ${safeText(this.label)} (${formatBytes(this.total)})${detail ? ' ' + detail : ''}`);
  }

  fail(message: string): void {
    this.view.finish(this, `failed ${safeText(this.label)}: ${message}`);
  }
}

export class Progress {
  readonly now: () => number;
  private readonly active = new Set<Task>();
  private drawn = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private loadedAll = 0;
  private totalAll = 0;
  private filesDone = 0;
  private readonly started: number;
  private baseAll = 0;

  constructor(private readonly out: ProgressStream, readonly opts: ProgressOptions) {
    this.now = opts.now ?? Date.now;
    this.started = this.now();
  }

  /** Adds to the overall byte count before the tasks start, so the overall bar is right from the first draw. */
  expect(bytes: number): void {
    this.totalAll += bytes;
  }

  start(label: string, total: number): Task {
    const task = new Task(this, label, total);
    this.active.add(task);
    this.changed(task);
    return task;
  }

  /** Bytes a task already had when it started (resumed) count as done but not toward the speed. */
  moved(delta: number, initial: boolean): void {
    this.loadedAll += delta;
    if (initial) this.baseAll += delta;
  }

  changed(task: Task): void {
    if (this.opts.live) {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.draw();
      }, REDRAW_MS);
      return;
    }
    const now = this.now();
    if (task.loaded < task.total && now - task.lastPlain >= (this.opts.plainEveryMs ?? 5000)) {
      task.lastPlain = now;
      this.out.write(`${safeText(task.label)}: ${percent(task.loaded, task.total)}% (${formatBytes(task.loaded)} of ${formatBytes(task.total)})\n`);
    }
  }

  finish(task: Task, line: string): void {
    if (!this.active.delete(task)) return;
    this.filesDone++;
    this.print(line);
  }

  /** A line that stays: written above the live bars. */
  print(line: string): void {
    this.above(() => this.out.write(line + '\n'));
  }

  /** Runs `write` with the bars out of the way, for output to another stream on the same terminal. */
  above(write: () => void): void {
    if (!this.opts.live) return write();
    this.clear();
    write();
    this.draw();
  }

  /** Stops redrawing and removes the bars. */
  end(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.opts.live) this.clear();
  }

  private clear(): void {
    // Up to the first bar line, then erase to the end of the screen.
    if (this.drawn > 0) this.out.write(`\x1b[${this.drawn}F\x1b[0J`);
    this.drawn = 0;
  }

  /**
   * One bar line. Every line's tail (bar, percentage, rate, estimate) has the same width and
   * every label is padded to `room`, so the bars of all lines start in one column.
   */
  private lineFor(label: string, loaded: number, total: number, sample: Sample, room: number): string {
    const rate = sample.ms > 0 ? sample.bytes / (sample.ms / 1000) : 0;
    const left = etaText(sample, total - loaded).padEnd(ETA_WIDTH);
    const tail = `  ${bar(total === 0 ? 1 : loaded / total)} ${String(percent(loaded, total)).padStart(3)}%  ${formatRate(rate).padStart(RATE_WIDTH)}  ${left}`;
    const name = shorten(safeText(label), room);
    return `${name}${' '.repeat(Math.max(0, room - [...name].length))}${tail}`.trimEnd();
  }

  private draw(): void {
    if (!this.opts.live) return;
    const now = this.now();
    const width = Math.max(40, (this.out.columns || 80) - 1);
    const rows: Array<[string, number, number, Sample]> = [];
    for (const task of this.active) rows.push([task.label, task.loaded, task.total, task.sample(now)]);
    const files = this.opts.files ?? 0;
    if (files > 1) {
      const total = `Total ${this.filesDone}/${files}, ${formatBytes(this.loadedAll)}/${formatBytes(this.totalAll)}`;
      rows.push([total, this.loadedAll, Math.max(this.totalAll, 1), { bytes: this.loadedAll - this.baseAll, ms: now - this.started }]);
    }
    // The labels' column is as wide as the longest label, within what the terminal leaves.
    const tailWidth = 2 + BAR + 1 + 4 + 2 + RATE_WIDTH + 2 + ETA_WIDTH;
    const longest = Math.max(0, ...rows.map(([label]) => [...safeText(label)].length));
    const room = Math.max(8, Math.min(longest, width - tailWidth));
    const lines = rows.map(([label, loaded, total, sample]) => this.lineFor(label, loaded, total, sample, room));
    this.clear();
    if (lines.length > 0) this.out.write(lines.join('\n') + '\n');
    this.drawn = lines.length;
  }
}
