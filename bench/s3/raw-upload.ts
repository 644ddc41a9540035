// Coffer's own upload with raw parts (contract §9), the reference line of bench:s3: each part
// read from disk and sent as it is, a few in flight, then completed.

import fs from "node:fs";
import http from "node:http";
import { requireString, type OriginApi } from "../common.js";

export interface RawUpload {
  api: OriginApi;
  accessKey: string;
  file: string;
  size: number;
  part: number;
  parallel: number;
}

/** Whether the origin takes raw parts (contract §9): a part for no upload is 404 then, 415 when only JSON is taken. */
export async function takesRawParts(api: OriginApi, accessKey: string): Promise<boolean> {
  const status = await new Promise<number>((resolve, reject) => {
    const u = new URL("/collections/upload/file-progress?bucket=b&key=k&uploadId=u&fileId=f&partNumber=1", api.baseUrl);
    http.request(u, { method: "POST", headers: { "content-type": "application/octet-stream", "content-length": 1, authorization: `Bearer ${accessKey}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on("error", reject).end("x");
  });
  return status !== 415;
}

function sendPart(r: RawUpload, query: string, n: number, body: Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const u = new URL(`/collections/upload/file-progress?${query}`, r.api.baseUrl);
    const req = http.request({
      hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: "POST", agent: r.api.agent,
      headers: { "content-type": "application/octet-stream", "content-length": body.length, authorization: `Bearer ${r.accessKey}` },
    }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`part ${n}: HTTP ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Uploads `r.file` as `name`; answers the file's id. */
export async function rawUpload(r: RawUpload, name: string): Promise<string> {
  const init = await r.api.post("/collections/upload/file", { name, visibility: "Public", size: r.size, file_type: "other" });
  const fileId = requireString(init, "fileId", "initiate");
  const query = (n: number) =>
    new URLSearchParams({ bucket: String(init.bucket), key: String(init.key), uploadId: String(init.uploadId), fileId, partNumber: String(n) }).toString();
  const count = Math.max(1, Math.ceil(r.size / r.part));
  const fd = fs.openSync(r.file, "r");
  let next = 1;
  const worker = async () => {
    for (let n = next++; n <= count; n = next++) {
      const length = Math.min(r.part, r.size - (n - 1) * r.part);
      const body = Buffer.allocUnsafe(length);
      fs.readSync(fd, body, 0, length, (n - 1) * r.part);
      await sendPart(r, query(n), n, body);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(r.parallel, count) }, () => worker()));
  } finally {
    fs.closeSync(fd);
  }
  await r.api.post("/collections/upload/complete-upload", { file_id: fileId });
  return fileId;
}
