// The bare Node `http` server of bench/delivery.ts (bench/bare-node-server.mjs):
// the same bytes from memory with the headers the edge sent for a hit.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Child, type HttpResponse } from "../common.js";

const SERVER_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "bare-node-server.mjs");
/** Headers the server's own http module writes, or that describe the connection rather than the answer. */
const OWN_HEADERS = new Set(["date", "connection", "keep-alive", "transfer-encoding"]);

/** The answer's headers as a flat [name, value, ...] list, without the per-connection ones. */
export function answerHeaders(res: HttpResponse): string[] {
  const list: string[] = [];
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || OWN_HEADERS.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) list.push(name, v);
  }
  return list;
}

/**
 * Starts the server with `bytes` and `headers`; `wrap` turns the command into the
 * pinned one (taskset execs it, so the pid is the server's).
 */
export async function startBareNode(
  wrap: (command: string, args: string[]) => { command: string; args: string[] },
  env: NodeJS.ProcessEnv,
  workDir: string,
  bytes: Buffer,
  headers: string[],
  timeoutMs: number,
): Promise<{ child: Child; url: string }> {
  const file = path.join(workDir, "bare-node.bin");
  fs.writeFileSync(file, bytes);
  const { child, match } = await Child.start(
    { name: "bare node", ...wrap(process.execPath, [SERVER_SCRIPT, file, JSON.stringify(headers)]), env },
    /bare node listening on (https?:\/\/[^\s"']+)/,
    timeoutMs,
  );
  return { child, url: match };
}
