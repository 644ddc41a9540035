// A paced prober in a process of its own: GETs one URL at a steady rate over keep-alive
// connections until a line arrives on stdin, then prints every latency. Measuring from the
// process that also fires a burst of other requests would count that process's own pauses.
//
//   tsx bench/paced-probe.ts <url> <requests per second>
//   prints "probing" once the first answer came back, and "latencies [ms, ...]" after "stop".

import http from "node:http";
import { performance } from "node:perf_hooks";

const [url, rate] = process.argv.slice(2);
const perSecond = Number(rate);
if (!url || !(perSecond > 0)) {
  process.stderr.write("usage: tsx bench/paced-probe.ts <url> <requests per second>\n");
  process.exit(2);
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function get(): Promise<number> {
  const t0 = performance.now();
  return new Promise<number>((resolve, reject) => {
    http.get(url!, { agent }, (res) => {
      res.resume();
      res.on("error", reject);
      res.on("end", () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${url} answered ${res.statusCode}`))));
    }).on("error", reject);
  });
}

let stopped = false;
process.stdin.setEncoding("utf8");
process.stdin.on("data", () => (stopped = true));
process.stdin.on("end", () => (stopped = true));

async function main(): Promise<void> {
  await get();
  process.stdout.write("probing\n");
  const latencies: number[] = [];
  const inflight: Array<Promise<void>> = [];
  const gap = 1000 / perSecond;
  for (let next = performance.now(); !stopped; next += gap) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inflight.push(get().then((ms) => void latencies.push(ms)));
  }
  await Promise.all(inflight);
  process.stdout.write(`latencies ${JSON.stringify(latencies.map((ms) => Math.round(ms * 1000) / 1000))}\n`);
  agent.destroy();
}

main().catch((err: unknown) => {
  process.stderr.write(`probe failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
