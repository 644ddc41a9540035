/** `coffer download`: from the delivery network, resumed by Range, checked against the stored SHA-256. */
import { createHash } from 'node:crypto';
import { createWriteStream, rmSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { rename, rm, stat } from 'node:fs/promises';
import { CliError, clientFor, type ClientFlags, type Io } from './common.js';
import { safeText, shownFileName } from './format.js';
import { Progress } from './progress.js';
import { pathInside } from './safe-name.js';

/** Streams a delivery URL from byte `from` into `onChunk`; a refusal is a CliError, a dropped connection a plain error. */
async function fetchInto(url: string, from: number, name: string, onChunk: (chunk: Uint8Array) => Promise<void>): Promise<void> {
  const res = await fetch(url, { headers: from > 0 ? { range: `bytes=${from}-` } : {} });
  if (res.status !== (from > 0 ? 206 : 200)) {
    const text = await res.text().catch(() => '');
    let message = `the delivery network answered ${res.status}`;
    try {
      message = (JSON.parse(text) as { error: { message: string } }).error.message;
    } catch {
      // Not a Coffer error body.
    }
    throw new CliError(`Could not download "${name}": ${message}`);
  }
  if (!res.body) return;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) await onChunk(chunk);
}

/** Waits until the stream takes more, or can take nothing more (closed, failed). */
function drained(out: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      out.off('error', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
    out.on('error', done);
  });
}

function closeStream(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.end(() => resolve());
  });
}

export async function download(id: string, flags: ClientFlags & { output?: string; force?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const file = await client.getFile(id);
  const shown = shownFileName(file.name);
  if (file.status !== 'ready') throw new CliError(`"${shown}" is still uploading; it can be downloaded once the upload completes.`);
  const toStdout = flags.output === '-';
  // The stored name is data: it only ever picks a plain name inside the target directory.
  // A path given with -o is the user's own and is taken as it is.
  let named = false;
  let dir = process.cwd();
  if (flags.output && !toStdout) {
    const st = await stat(flags.output).catch(() => null);
    named = !st?.isDirectory();
    dir = flags.output;
  }
  let target: string;
  try {
    target = named ? flags.output! : pathInside(dir, file.name, file.file_id);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  if (!toStdout && !named && !flags.force && (await stat(target).catch(() => null))) {
    throw new CliError(`${target} already exists: pass --force to replace it, or -o PATH to save elsewhere.`);
  }
  const { download_url: url } = await client.downloadUrl({ file_id: id });

  const progress = new Progress(io.stderr, { live: io.stderr.isTTY === true && !toStdout, verb: 'downloaded' });
  const task = progress.start(shownFileName(file.name), file.size);
  const temp = `${target}.coffer-part-${process.pid}`;
  // 'wx': a file or link already at the temporary name is never written through.
  const out: NodeJS.WritableStream = toStdout ? process.stdout : createWriteStream(temp, { mode: 0o644, flags: 'wx' });
  // A target that cannot be written (no such folder, no permission, a full disk, a closed
  // pipe) is reported as a failure of the command, never as an unhandled stream error.
  let writeError: Error | null = null;
  out.on('error', (err: Error) => {
    writeError ??= err;
  });
  const checkWrite = () => {
    if (writeError) throw new CliError(`Could not write ${toStdout ? 'to standard output' : target}: ${writeError.message}`);
  };
  const hash = createHash('sha256');
  let written = 0;
  const cleanup = () => {
    if (!toStdout) void rm(temp, { force: true });
  };
  const onSignal = () => {
    progress.end();
    // Synchronously: the process exits right after, before an asynchronous removal would run.
    if (!toStdout) rmSync(temp, { force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  try {
    if (!toStdout) await once(out, 'ready').catch(() => undefined);
    checkWrite();
    // A dropped connection continues where it stopped (Range), up to five attempts in all.
    for (let attempt = 1; ; attempt++) {
      const more = await fetchInto(url, written, shown, async (chunk) => {
        hash.update(chunk);
        written += chunk.length;
        checkWrite();
        if (!out.write(chunk)) await drained(out);
        checkWrite();
        task.update(written);
      }).then(() => null, (err: unknown) => err);
      if (more instanceof CliError) throw more;
      if (more === null && written >= file.size) break;
      if (attempt >= 5) throw new CliError(`The download of "${shown}" kept failing${more ? `: ${(more as Error).message}` : ''}. Try again.`);
      await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
    }
    if (!toStdout) await closeStream(out as WriteStream).catch(() => undefined);
    checkWrite();
    const sha256 = hash.digest('hex');
    if (written !== file.size || sha256 !== file.sha256) {
      throw new CliError(`The bytes received for "${shown}" do not match its stored SHA-256; nothing was saved. Try again.`);
    }
    if (!toStdout) await rename(temp, target);
    task.done(toStdout ? '' : `to ${safeText(target)}`);
  } catch (err) {
    cleanup();
    throw err;
  } finally {
    progress.end();
    process.off('SIGINT', onSignal);
  }
}
