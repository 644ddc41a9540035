// Holds up what bench/delivery.ts measures, for profiling by hand: an origin, an edge with a
// 4 KiB Public file cached and a signed link to it, and the bare Node server answering the
// same bytes with the same headers. Prints their pids and URLs, then waits for Ctrl-C.
//
//   npx tsx bench/delivery/hold.ts [--edge-prefix "valgrind --tool=callgrind"] [--edge-node-args "--cpu-prof"]
//                                  [--bare-prefix ...] [--cpu N] [--info FILE] [--entry dist/cli/main.js]
//
// --cpu pins every server to that CPU (taskset); --info writes the URLs and pids as JSON.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Child, OriginApi, createLink, installExitHandlers, log, makeWorkDir, request, stopAll, uploadFile } from "../common.js";
import { answerHeaders, startBareNode } from "./bare-node.js";

const { values } = parseArgs({
  options: {
    "edge-prefix": { type: "string", default: "" },
    "edge-node-args": { type: "string", default: "" },
    "bare-prefix": { type: "string", default: "" },
    cpu: { type: "string" },
    info: { type: "string" },
    "small-kib": { type: "string", default: "4" },
    entry: { type: "string" },
  },
});
const ENTRY = values.entry ?? path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", "dist", "cli", "main.js");
const words = (s: string | undefined): string[] => (s ?? "").split(" ").filter((w) => w !== "");
const wrap = (prefix: string[], command: string, args: string[]): { command: string; args: string[] } => {
  const pinned = values.cpu === undefined ? [] : ["taskset", "-c", values.cpu];
  const all = [...pinned, ...prefix, command, ...args];
  return { command: all[0]!, args: all.slice(1) };
};
const env = (): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("COFFER_")));

installExitHandlers();
// Removed with the servers on Ctrl-C or SIGTERM (common.ts exit handlers).
const work = makeWorkDir(os.tmpdir(), "coffer-hold-", false);
const secret = randomBytes(32).toString("hex");
const token = randomBytes(32).toString("hex");
const accessKey = randomBytes(24).toString("hex");
const children: Child[] = [];
try {
  fs.mkdirSync(path.join(work, "origin"));
  fs.mkdirSync(path.join(work, "edge"));
  const origin = await Child.start({
    name: "origin", ...wrap([], process.execPath, [ENTRY, "origin"]),
    env: { ...env(), COFFER_PORT: "0", COFFER_S3_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: path.join(work, "origin"), COFFER_ACCESS_KEY: accessKey, COFFER_SIGNING_SECRET: secret, COFFER_EDGE_TOKEN: token, COFFER_CDN_URL: "http://cdn.invalid" },
  }, /origin listening on (https?:\/\/[^\s"']+)/, 60_000);
  children.push(origin.child);
  const edge = await Child.start({
    name: "edge", ...wrap(words(values["edge-prefix"]), process.execPath, [...words(values["edge-node-args"]), ENTRY, "edge", "--origin", origin.match]),
    env: { ...env(), COFFER_EDGE_PORT: "0", COFFER_HOST: "127.0.0.1", COFFER_DATA_DIR: path.join(work, "edge"), COFFER_SIGNING_SECRET: secret, COFFER_EDGE_TOKEN: token },
  }, /edge listening on (https?:\/\/[^\s"']+)/, 300_000);
  children.push(edge.child);
  const api = new OriginApi(origin.match, accessKey);
  const small = randomBytes(Math.round(Number(values["small-kib"]) * 1024));
  const up = await uploadFile(api, small, { name: "small.bin", visibility: "Public" });
  const signed = await createLink(api, up.fileId, 3600);
  for (let i = 0; ; i++) {
    const res = await request(`${edge.match}${up.deliveryPath}`, { timeoutMs: 30_000 });
    if (res.status === 200 && res.headers["x-cache"] === "HIT") break;
    if (i > 600) throw new Error("the edge never served the file from its cache");
    await new Promise((r) => setTimeout(r, 100));
  }
  const hit = await request(`${edge.match}${up.deliveryPath}`, { timeoutMs: 30_000 });
  const bare = await startBareNode((c, a) => wrap(words(values["bare-prefix"]), c, a), env(), work, small, answerHeaders(hit), 300_000);
  children.push(bare.child);
  const info = {
    origin: { pid: origin.child.pid, url: origin.match },
    edge: { pid: edge.child.pid, url: edge.match, public: `${edge.match}${up.deliveryPath}`, signed: `${edge.match}${signed}` },
    bare: { pid: bare.child.pid, url: `${bare.url}/small.bin` },
  };
  if (values.info) fs.writeFileSync(values.info, JSON.stringify(info, null, 2));
  log(JSON.stringify(info, null, 2));
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
} finally {
  await stopAll(children);
  fs.rmSync(work, { recursive: true, force: true });
}
