// Webhook bench: complete-upload latency with no webhook, with a receiver that answers at
// once, and with one that never answers, side by side in one run (one origin, embedded
// storage, no edge). The goal: a receiver, slow or dead, changes nothing for the API —
// p99 within noise of the run without webhooks.
//
// Run with `npm run bench:webhooks -- [--uploads N]`.

import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  Child, DEFAULT_ENTRY, OriginApi, fmt, installExitHandlers, log, makeWorkDir, percentile, positiveNumber, renderTable, stopAll, uploadFile,
} from "./common.js";

const { values } = parseArgs({ options: { uploads: { type: "string" }, keep: { type: "boolean" } } });
const UPLOADS = positiveNumber(values.uploads, 200, "--uploads", true);

type Mode = "none" | "answering" | "never answering";

async function main(): Promise<void> {
  installExitHandlers();
  const work = makeWorkDir(os.tmpdir(), "coffer-webhooks-", values.keep ?? false);
  const key = randomBytes(24).toString("hex");
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COFFER_")) env[k] = v;
  const { child: origin, match: url } = await Child.start({
    name: "origin", command: process.execPath, args: [DEFAULT_ENTRY, "origin"],
    env: {
      ...env, COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: path.join(work, "origin"), COFFER_ACCESS_KEY: key,
      COFFER_SIGNING_SECRET: randomBytes(16).toString("hex"), COFFER_EDGE_TOKEN: randomBytes(16).toString("hex"), COFFER_LOG_LEVEL: "warn",
      COFFER_WEBHOOK_ALLOW_PRIVATE: "1",
    },
  }, /origin listening on (http:\/\/\S+)/, 30_000);
  const held: http.ServerResponse[] = [];
  let answered = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/never") held.push(res);
      else {
        answered++;
        res.writeHead(200).end();
      }
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const port = (receiver.address() as AddressInfo).port;
  const api = new OriginApi(url, key, 4);
  const data = randomBytes(64 * 1024);
  const rows: string[][] = [["webhook", "uploads", "p50 ms", "p99 ms", "p99 vs none"]];
  let baseline: number | null = null;
  try {
    const modes: Mode[] = ["none", "answering", "never answering"];
    // Two rounds, modes alternating, so drift in the machine falls on all of them alike.
    const times = new Map<Mode, number[]>(modes.map((m) => [m, []]));
    for (let round = 0; round < 2; round++) {
      for (const mode of modes) {
        let hook: string | null = null;
        if (mode !== "none") {
          const made = await api.post("/collections/webhooks/create", { url: `http://127.0.0.1:${port}/${mode === "answering" ? "ok" : "never"}`, events: ["file.ready"] });
          hook = made.webhook_id as string;
        }
        for (let i = 0; i < UPLOADS / 2; i++) {
          const t = performance.now();
          await uploadFile(api, data, { name: `w${i}.bin`, visibility: "Public" });
          times.get(mode)!.push(performance.now() - t);
        }
        if (hook) await api.post("/collections/webhooks/delete", { webhook_id: hook });
      }
    }
    for (const mode of modes) {
      const xs = times.get(mode)!;
      const p99 = percentile(xs, 99);
      if (mode === "none") baseline = p99;
      rows.push([mode, String(xs.length), fmt(percentile(xs, 50), 2), fmt(p99, 2), baseline && p99 ? `${fmt(p99 / baseline, 2)}x` : "-"]);
    }
    log(`receiver took ${answered} deliveries; ${held.length} were left hanging`);
    process.stdout.write(`\nWhole uploads (initiate, one 64 KiB part, complete-upload), one after the other:\n\n${renderTable(rows).join("\n")}\n`);
  } finally {
    api.close();
    for (const res of held) res.destroy();
    receiver.closeAllConnections();
    receiver.close();
    await stopAll([origin]);
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  log(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
