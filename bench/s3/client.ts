// A small S3 client for bench:s3's CPU lines: SigV4 in the Authorization header, bodies streamed
// from a file in 1 MiB pieces as the SDKs send them, with the three payload forms an origin sees:
// a signed payload (x-amz-content-sha256 = the body's hex SHA-256, hashed before sending, as
// botocore does over http), UNSIGNED-PAYLOAD, and STREAMING-AWS4-HMAC-SHA256-PAYLOAD (64 KiB
// aws-chunked chunks, each signed, as the Java and Node SDKs send).

import { createHash, createHmac } from "node:crypto";
import fs from "node:fs";
import http from "node:http";

export type PayloadMode = "signed" | "unsigned" | "streaming";
export const PAYLOAD_MODES: readonly PayloadMode[] = ["signed", "unsigned", "streaming"];

const PIECE = 1 << 20;
const CHUNK = 64 * 1024;
const EMPTY_SHA256 = createHash("sha256").digest("hex");
const REGION = "us-east-1";

const encode = (text: string): string => encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key: Buffer | string, text: string): Buffer => createHmac("sha256", key).update(text).digest();
const sha256 = (data: Buffer | string): string => createHash("sha256").update(data).digest("hex");

/** A run of a file's bytes. */
export interface Slice {
  file: string;
  offset: number;
  length: number;
}

async function* pieces(slice: Slice): AsyncGenerator<Buffer> {
  if (slice.length === 0) return;
  const stream = fs.createReadStream(slice.file, { start: slice.offset, end: slice.offset + slice.length - 1, highWaterMark: PIECE });
  for await (const piece of stream) yield piece as Buffer;
}

async function hashSlice(slice: Slice): Promise<string> {
  const hash = createHash("sha256");
  for await (const piece of pieces(slice)) hash.update(piece);
  return hash.digest("hex");
}

/** The length of `n` payload bytes sent as signed aws-chunked chunks of CHUNK bytes. */
function chunkedLength(n: number): number {
  const sig = ";chunk-signature=".length + 64 + 4;
  const full = Math.floor(n / CHUNK);
  const rest = n % CHUNK;
  let total = full * (CHUNK.toString(16).length + sig + CHUNK);
  if (rest > 0) total += rest.toString(16).length + sig + rest;
  return total + 1 + sig;
}

export class BenchS3 {
  private readonly url: URL;
  constructor(endpoint: string, private readonly keyId: string, private readonly secret: string, readonly agent: http.Agent) {
    this.url = new URL(endpoint);
  }

  private signingKey(day: string): Buffer {
    return hmac(hmac(hmac(hmac(`AWS4${this.secret}`, day), REGION), "s3"), "aws4_request");
  }

  /** Sends one request; answers its status, headers and body text. */
  async send(method: string, path: string, query: Record<string, string>, body: Slice | null, mode: PayloadMode = "signed", extra: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
    const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, "");
    const scope = `${amzDate.slice(0, 8)}/${REGION}/s3/aws4_request`;
    const length = body?.length ?? 0;
    const contentSha = mode === "unsigned" ? "UNSIGNED-PAYLOAD" : mode === "streaming" ? "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" : body ? await hashSlice(body) : EMPTY_SHA256;
    const headers: Record<string, string> = { ...extra, host: this.url.host, "x-amz-date": amzDate, "x-amz-content-sha256": contentSha };
    if (mode === "streaming") {
      headers["content-encoding"] = "aws-chunked";
      headers["x-amz-decoded-content-length"] = String(length);
      headers["content-length"] = String(chunkedLength(length));
    } else {
      headers["content-length"] = String(length);
    }
    const names = Object.keys(headers).sort();
    const canonicalQuery = Object.entries(query).map(([n, v]) => `${encode(n)}=${encode(v)}`).sort().join("&");
    const uri = path.split("/").map(encode).join("/");
    const canonical = [method, uri, canonicalQuery, names.map((n) => `${n}:${headers[n]!.trim()}\n`).join(""), names.join(";"), contentSha].join("\n");
    const key = this.signingKey(amzDate.slice(0, 8));
    const signature = hmac(key, ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n")).toString("hex");
    headers.authorization = `AWS4-HMAC-SHA256 Credential=${this.keyId}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}`;
    const chunkSigner = mode === "streaming" ? { key, amzDate, scope, previous: signature } : null;
    return new Promise((resolve, reject) => {
      const req = http.request({
        hostname: this.url.hostname, port: this.url.port, method, agent: this.agent,
        path: canonicalQuery === "" ? uri : `${uri}?${canonicalQuery}`, headers,
      }, (res) => {
        const parts: Buffer[] = [];
        res.on("data", (d: Buffer) => parts.push(d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("error", reject);
      this.writeBody(req, body, chunkSigner).then(() => req.end(), (err: unknown) => req.destroy(err as Error));
    });
  }

  /** Writes the body in pieces, waiting for the socket to drain as a streaming client does. */
  private async writeBody(req: http.ClientRequest, body: Slice | null, chunked: { key: Buffer; amzDate: string; scope: string; previous: string } | null): Promise<void> {
    if (!body) return;
    const write = (data: Buffer): Promise<void> | null => (req.write(data) ? null : new Promise((r) => req.once("drain", () => r())));
    if (!chunked) {
      for await (const piece of pieces(body)) await write(piece);
      return;
    }
    const sendChunk = async (data: Buffer): Promise<void> => {
      const text = ["AWS4-HMAC-SHA256-PAYLOAD", chunked.amzDate, chunked.scope, chunked.previous, EMPTY_SHA256, sha256(data)].join("\n");
      chunked.previous = hmac(chunked.key, text).toString("hex");
      await write(Buffer.from(`${data.length.toString(16)};chunk-signature=${chunked.previous}\r\n`, "latin1"));
      if (data.length > 0) await write(data);
      await write(Buffer.from("\r\n"));
    };
    let pending: Buffer[] = [];
    let held = 0;
    for await (const piece of pieces(body)) {
      pending.push(piece);
      held += piece.length;
      while (held >= CHUNK) {
        const all = Buffer.concat(pending);
        await sendChunk(all.subarray(0, CHUNK));
        pending = [all.subarray(CHUNK)];
        held -= CHUNK;
      }
    }
    if (held > 0) await sendChunk(Buffer.concat(pending));
    await sendChunk(Buffer.alloc(0));
  }

  async putObject(bucket: string, key: string, body: Slice, mode: PayloadMode): Promise<void> {
    const r = await this.send("PUT", `/${bucket}/${key}`, {}, body, mode);
    if (r.status !== 200) throw new Error(`PutObject ${key} (${mode}): HTTP ${r.status} ${r.text.slice(0, 300)}`);
  }

  /** A multipart upload of `file` in parts of `part` bytes, `parallel` in flight. */
  async multipart(bucket: string, key: string, file: string, size: number, part: number, parallel: number, mode: PayloadMode): Promise<void> {
    const path = `/${bucket}/${key}`;
    const created = await this.send("POST", path, { uploads: "" }, null);
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)?.[1];
    if (created.status !== 200 || !uploadId) throw new Error(`CreateMultipartUpload: HTTP ${created.status} ${created.text.slice(0, 300)}`);
    const count = Math.max(1, Math.ceil(size / part));
    const etags: string[] = [];
    let next = 1;
    const worker = async (): Promise<void> => {
      for (let n = next++; n <= count; n = next++) {
        const slice = { file, offset: (n - 1) * part, length: Math.min(part, size - (n - 1) * part) };
        const r = await this.send("PUT", path, { partNumber: String(n), uploadId }, slice, mode);
        if (r.status !== 200) throw new Error(`UploadPart ${n} (${mode}): HTTP ${r.status} ${r.text.slice(0, 300)}`);
        etags[n - 1] = String(r.headers.etag);
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, count) }, () => worker()));
    const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("")}</CompleteMultipartUpload>`;
    const tmp = `${file}.complete.xml`;
    fs.writeFileSync(tmp, xml);
    const done = await this.send("POST", path, { uploadId }, { file: tmp, offset: 0, length: Buffer.byteLength(xml) });
    if (done.status !== 200 || !done.text.includes("CompleteMultipartUploadResult")) throw new Error(`CompleteMultipartUpload: HTTP ${done.status} ${done.text.slice(0, 300)}`);
  }
}
