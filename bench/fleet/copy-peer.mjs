// Half of the fleet benchmark's copy-rate measurement: bytes between two local processes.
//
//   node bench/fleet/copy-peer.mjs send BYTES          serves BYTES to every connection; prints "copy peer listening on PORT"
//   node bench/fleet/copy-peer.mjs recv PORT BYTES N   reads BYTES from N connections one after another; prints "copied B in MS ms"

import net from "node:net";
import { performance } from "node:perf_hooks";

const [mode, a, b, c] = process.argv.slice(2);
if (mode === "send") {
  const body = Buffer.alloc(Number(a), 7);
  const server = net.createServer((socket) => socket.end(body));
  server.listen(0, "127.0.0.1", () => process.stdout.write(`copy peer listening on ${server.address().port}\n`));
  process.on("SIGTERM", () => process.exit(0));
} else if (mode === "recv") {
  const port = Number(a);
  const bytes = Number(b);
  const rounds = Number(c);
  const once = () =>
    new Promise((resolve, reject) => {
      let got = 0;
      const socket = net.connect(port, "127.0.0.1");
      socket.on("data", (chunk) => (got += chunk.length));
      socket.on("end", () => (got === bytes ? resolve(got) : reject(new Error(`got ${got} of ${bytes} bytes`))));
      socket.on("error", reject);
    });
  const t0 = performance.now();
  let total = 0;
  for (let i = 0; i < rounds; i++) total += await once();
  process.stdout.write(`copied ${total} in ${(performance.now() - t0).toFixed(3)} ms\n`);
} else {
  process.stderr.write("usage: copy-peer.mjs send BYTES | recv PORT BYTES ROUNDS\n");
  process.exit(2);
}
