// The tus lines: the reference, @tus/server with @tus/file-store in a child process, and
// Coffer's own /tus (contract §9) when the origin has it. Both are fed by tus-js-client
// sending the whole upload in one PATCH (its default chunkSize), no retries.

import fs from "node:fs";
import path from "node:path";
import { Upload } from "tus-js-client";
import { Child, MiB, REPO_ROOT, log } from "../common.js";
import { createHash } from "node:crypto";

// Run as `node --input-type=module -e <this>` from the repository root so the imports
// resolve from ./node_modules; plain JS, so no loader's memory is counted as the peer's.
const TUS_SERVER_SCRIPT = `
import http from "node:http";
import { FileStore } from "@tus/file-store";
import { Server } from "@tus/server";
const directory = process.env.BENCH_TUS_DIR;
const tus = new Server({ path: "/files", datastore: new FileStore({ directory }) });
const server = http.createServer((req, res) => {
  tus.handle(req, res).catch((err) => {
    console.error("tus handler error:", err);
    if (!res.headersSent) res.statusCode = 500;
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write("tus listening on http://127.0.0.1:" + server.address().port + "/files/\\n"));
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
`;

export async function startTusServer(dataDir: string, timeoutMs: number): Promise<{ child: Child; endpoint: string }> {
  const { child, match } = await Child.start(
    { name: "@tus/server", command: process.execPath, args: ["--input-type=module", "-e", TUS_SERVER_SCRIPT], env: { ...process.env, BENCH_TUS_DIR: dataDir }, cwd: REPO_ROOT },
    /tus listening on (http:\/\/\S+)/,
    timeoutMs,
  );
  log(`@tus/server: pid ${child.pid}, ${match}`);
  return { child, endpoint: match };
}

/** One tus upload of `data` in one PATCH; resolves with the upload's URL once the server has it all. */
export function tusUpload(endpoint: string, data: Buffer, signal: AbortSignal, extra: { headers?: Record<string, string>; metadata?: Record<string, string> } = {}): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const upload = new Upload(data, {
      endpoint,
      retryDelays: null, // a failure fails the round
      headers: extra.headers ?? {},
      metadata: { filename: "bench.bin", filetype: "application/octet-stream", ...extra.metadata },
      onSuccess: () => (upload.url === null ? reject(new Error("tus upload finished without a URL")) : resolve(upload.url)),
      onError: (err) => reject(err),
    });
    signal.addEventListener("abort", () => {
      void upload.abort().catch(() => {});
      reject(signal.reason);
    }, { once: true });
    upload.start();
  });
}

/** Whether the origin speaks tus at /tus: OPTIONS answered with Tus-Resumable. */
export async function hasTus(baseUrl: string): Promise<boolean> {
  try {
    const res = await fetch(new URL("/tus", baseUrl), { method: "OPTIONS", signal: AbortSignal.timeout(5000) });
    await res.arrayBuffer();
    return res.headers.get("tus-resumable") !== null;
  } catch {
    return false;
  }
}

export function sha256File(file: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256");
    fs.createReadStream(file, { highWaterMark: MiB })
      .on("error", reject)
      .on("data", (c) => hash.update(c))
      .on("end", () => resolve(hash.digest("hex")));
  });
}

/** The file @tus/file-store wrote for an upload URL. */
export const tusStoredFile = (dataDir: string, uploadUrl: string): string => path.join(dataDir, new URL(uploadUrl).pathname.split("/").filter(Boolean).pop() ?? "");

export async function emptyDir(dir: string): Promise<void> {
  for (const entry of await fs.promises.readdir(dir)) await fs.promises.rm(path.join(dir, entry), { recursive: true, force: true });
}
