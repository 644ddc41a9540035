// Half of the fleet benchmark's copy-rate measurement: bytes between two local processes.
//
//   node bench/fleet/copy-peer.mjs send BYTES                serves BYTES to every connection; prints "copy peer listening on PORT"
//   node bench/fleet/copy-peer.mjs recv PORT BYTES N         reads BYTES from N connections one after another; prints "copied B in MS ms"
//   node bench/fleet/copy-peer.mjs fill PORT BYTES N DIR     the same, doing with them what an edge's verified fill must at
//                                                            least do (src/edge/blob-fetch.ts, fill-copy.ts): read into one
//                                                            256 KiB buffer, SHA-256 every byte, gather into 1 MiB writes to
//                                                            a new file in DIR, fsync it, check the digest; then remove it
//   node bench/fleet/copy-peer.mjs fills PORT BYTES N DIR    one such fill per line read on stdin, N times: prints "ready", then
//                                                            "fill R done in MS ms" after the R-th (a fleet of these, each
//                                                            told to go at once, copies the way a prewarm does)

import { createHash, randomBytes } from "node:crypto";
import { open, rm } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";

const READ_BUFFER = 256 * 1024;
const WRITE_BATCH = 1 << 20;
const [mode, a, b, c, d] = process.argv.slice(2);

/** The bytes the sender sends: the same every time, so a receiver can check their digest. */
const body = (n) => Buffer.alloc(n, 7);

if (mode === "send") {
  const bytes = body(Number(a));
  const server = net.createServer((socket) => {
    socket.on("error", () => {});
    socket.end(bytes);
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`copy peer listening on ${server.address().port}\n`));
  process.on("SIGTERM", () => process.exit(0));
} else if (mode === "recv" || mode === "fill" || mode === "fills") {
  const port = Number(a);
  const bytes = Number(b);
  const rounds = Number(c);
  const dir = d;
  const expected = mode !== "recv" ? createHash("sha256").update(body(bytes)).digest("hex") : "";
  const bare = () =>
    new Promise((resolve, reject) => {
      let got = 0;
      const socket = net.connect(port, "127.0.0.1");
      socket.on("data", (chunk) => (got += chunk.length));
      socket.on("end", () => (got === bytes ? resolve(got) : reject(new Error(`got ${got} of ${bytes} bytes`))));
      socket.on("error", reject);
    });
  const fill = async () => {
    const file = path.join(dir, randomBytes(8).toString("hex"));
    const out = await open(file, "wx", 0o600);
    const hash = createHash("sha256");
    const batch = Buffer.allocUnsafeSlow(WRITE_BATCH);
    let used = 0;
    let got = 0;
    try {
      await new Promise((resolve, reject) => {
        let writing = Promise.resolve();
        // Like the edge: a read that fills the batch waits for the write; reading stops meanwhile.
        const flush = async (view) => {
          for (let at = 0; at < view.length;) {
            const k = view.copy(batch, used, at);
            used += k;
            at += k;
            if (used === WRITE_BATCH) {
              await out.write(batch, 0, used);
              used = 0;
            }
          }
        };
        const socket = net.connect({
          port,
          host: "127.0.0.1",
          onread: {
            buffer: Buffer.allocUnsafe(READ_BUFFER),
            callback: (n, buf) => {
              const view = Buffer.from(buf.buffer, buf.byteOffset, n);
              hash.update(view);
              got += n;
              if (n < WRITE_BATCH - used) {
                view.copy(batch, used);
                used += n;
                return true;
              }
              writing = flush(view).then(() => socket.resume(), (err) => socket.destroy(err));
              return false;
            },
          },
        });
        socket.on("end", () => writing.then(resolve, reject));
        socket.on("error", reject);
      });
      if (used > 0) await out.write(batch, 0, used);
      await out.sync();
    } finally {
      await out.close();
    }
    if (got !== bytes || hash.digest("hex") !== expected) throw new Error(`got ${got} of ${bytes} bytes, or not the bytes sent`);
    await rm(file);
    return got;
  };
  if (mode === "fills") {
    // Waits for each go line before its fill, so many of these start together.
    const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
    process.stdout.write("ready\n");
    for (let r = 1; r <= rounds; r++) {
      if ((await lines.next()).done) break;
      const t0 = performance.now();
      await fill();
      process.stdout.write(`fill ${r} done in ${(performance.now() - t0).toFixed(3)} ms\n`);
    }
    // Stays until stdin ends, so its CPU can be read after the last fill.
    while (!(await lines.next()).done);
    process.exit(0);
  }
  const t0 = performance.now();
  let total = 0;
  for (let i = 0; i < rounds; i++) total += await (mode === "fill" ? fill() : bare());
  process.stdout.write(`copied ${total} in ${(performance.now() - t0).toFixed(3)} ms\n`);
} else {
  process.stderr.write("usage: copy-peer.mjs send BYTES | recv PORT BYTES ROUNDS | fill PORT BYTES ROUNDS DIR | fills PORT BYTES ROUNDS DIR\n");
  process.exit(2);
}
