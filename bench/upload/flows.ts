// Coffer's upload flows as a careful client sends them: initiate, the parts with N in flight
// over keep-alive connections, complete. A JSON part's base64 is encoded piece by piece as
// it is written, with the socket's backpressure respected, so neither side ever holds a
// part's text whole; a raw part is its bytes, written as they are.

import { once } from "node:events";
import http from "node:http";
import { HttpError, isRecord, requirePositiveInt, requireString } from "../common.js";

export type PartForm = "json-first" | "json-last" | "raw";

/**
 * Bytes encoded per string: a multiple of 3, so each piece's base64 joins the next without
 * padding, and small enough that the string stays under V8's large-object size (128 KiB).
 * A larger string costs an allocation of its own in the large-object space: encoding 256 MiB
 * in 384 KiB pieces takes some 15 times the CPU of 48 KiB pieces.
 */
const BASE64_PIECE = 3 * 16 * 1024;
/** Encoded pieces are gathered into writes of this many bytes. */
const WRITE_BYTES = (BASE64_PIECE / 3) * 4 * 16;

interface Answer {
  status: number;
  text: string;
}

/** A keep-alive client of one origin. */
export class CofferHttp {
  readonly agent: http.Agent;
  private readonly base: URL;

  constructor(baseUrl: string, private readonly accessKey: string, sockets: number) {
    this.base = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  /** POSTs a body written by `write` (which awaits the socket as it goes) of `length` bytes. */
  send(path: string, contentType: string, length: number, write: (req: http.ClientRequest) => Promise<void>, signal: AbortSignal): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const req = http.request({
        agent: this.agent, hostname: this.base.hostname, port: this.base.port, method: "POST", path, signal,
        headers: { "Content-Type": contentType, "Content-Length": length, Authorization: `Bearer ${this.accessKey}` },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      });
      req.on("error", (err) => reject(signal.aborted && signal.reason instanceof Error ? signal.reason : err));
      write(req).then(() => req.end(), (err: unknown) => req.destroy(err as Error));
    });
  }

  async postJson(path: string, body: object, signal: AbortSignal): Promise<Record<string, unknown>> {
    const text = Buffer.from(JSON.stringify(body));
    return parse(path, await this.send(path, "application/json", text.length, async (req) => void req.write(text), signal));
  }

  close(): void {
    this.agent.destroy();
  }
}

function parse(path: string, res: Answer): Record<string, unknown> {
  if (res.status < 200 || res.status >= 300) throw new HttpError(`POST ${path} -> HTTP ${res.status}: ${res.text.slice(0, 500)}`, res.status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    throw new HttpError(`POST ${path} -> HTTP ${res.status} with a non-JSON body: ${res.text.slice(0, 200)}`, res.status);
  }
  if (!isRecord(parsed)) throw new HttpError(`POST ${path} -> not a JSON object: ${res.text.slice(0, 200)}`, res.status);
  return parsed;
}

/** Writes, waiting for the socket to drain whenever it asks to. */
async function put(req: http.ClientRequest, piece: string | Buffer): Promise<void> {
  const more = typeof piece === "string" ? req.write(piece, "latin1") : req.write(piece);
  if (!more) await once(req, "drain");
}

interface Session {
  fileId: string;
  bucket: string;
  key: string;
  uploadId: string;
  chunkSize: number;
  partCount: number;
}

function sendPart(client: CofferHttp, form: PartForm, s: Session, n: number, part: Buffer, signal: AbortSignal): Promise<Answer> {
  if (form === "raw") {
    const query = new URLSearchParams({ bucket: s.bucket, key: s.key, uploadId: s.uploadId, fileId: s.fileId, partNumber: String(n) });
    return client.send(`/collections/upload/file-progress?${query}`, "application/octet-stream", part.length, (req) => put(req, part), signal);
  }
  const fields = `"bucket":${JSON.stringify(s.bucket)},"key":${JSON.stringify(s.key)},"uploadId":${JSON.stringify(s.uploadId)},"fileId":${JSON.stringify(s.fileId)},"partNumber":${n}`;
  const head = form === "json-first" ? `{"body":"` : `{${fields},"body":"`;
  const tail = form === "json-first" ? `",${fields}}` : `"}`;
  const length = Buffer.byteLength(head) + Math.ceil(part.length / 3) * 4 + Buffer.byteLength(tail);
  return client.send("/collections/upload/file-progress", "application/json", length, async (req) => {
    await put(req, head);
    // Encoded right before it goes out: a real client pays for this too.
    let out = Buffer.allocUnsafe(WRITE_BYTES);
    let used = 0;
    for (let at = 0; at < part.length; at += BASE64_PIECE) {
      used += out.write(part.toString("base64", at, Math.min(part.length, at + BASE64_PIECE)), used, "latin1");
      if (used === WRITE_BYTES) {
        await put(req, out);
        out = Buffer.allocUnsafe(WRITE_BYTES);
        used = 0;
      }
    }
    if (used > 0) await put(req, out.subarray(0, used));
    await put(req, tail);
  }, signal);
}

/** One upload of `data` in `form`; resolves with the file id once complete-upload answered with the right SHA-256. */
export async function cofferUpload(client: CofferHttp, form: PartForm, data: Buffer, expectedSha256: string, concurrency: number, signal: AbortSignal): Promise<string> {
  const where = "POST /collections/upload/file";
  const init = await client.postJson("/collections/upload/file", { name: `bench-${form}.bin`, visibility: "Private", size: data.length, file_type: "other" }, signal);
  const s: Session = {
    fileId: requireString(init, "fileId", where), bucket: requireString(init, "bucket", where), key: requireString(init, "key", where),
    uploadId: requireString(init, "uploadId", where), chunkSize: requirePositiveInt(init, "chunk_size", where), partCount: requirePositiveInt(init, "part_count", where),
  };
  if (s.partCount !== Math.max(1, Math.ceil(data.length / s.chunkSize))) throw new Error(`${where}: part_count ${s.partCount} does not fit ${data.length} bytes`);
  // The first failure stops the other workers.
  const local = new AbortController();
  const partSignal = AbortSignal.any([signal, local.signal]);
  let next = 1;
  const worker = async (): Promise<void> => {
    while (!partSignal.aborted) {
      const n = next++;
      if (n > s.partCount) return;
      const start = (n - 1) * s.chunkSize;
      parse("file-progress", await sendPart(client, form, s, n, data.subarray(start, Math.min(data.length, start + s.chunkSize)), partSignal));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, s.partCount) }, () => worker().catch((err: unknown) => {
      if (!local.signal.aborted) local.abort(err);
      throw err;
    })));
  } catch (err) {
    throw local.signal.aborted && local.signal.reason !== undefined ? local.signal.reason : err;
  }
  const record = await client.postJson("/collections/upload/complete-upload", { file_id: s.fileId }, signal);
  if (record.sha256 !== expectedSha256) throw new Error(`SHA-256 MISMATCH: ${form} upload completed with ${String(record.sha256)}, the source is ${expectedSha256}`);
  return s.fileId;
}

/** The SHA-256 Coffer reports for a file (for uploads that did not end in complete-upload). */
export async function fileSha256(client: CofferHttp, fileId: string, signal: AbortSignal): Promise<string> {
  return requireString(await client.postJson("/collections/file/get", { file_id: fileId }, signal), "sha256", "file/get");
}
