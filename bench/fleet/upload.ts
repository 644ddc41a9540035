// Uploads in two steps, so what the origin does for complete-upload (and the fan-out after
// it) can be measured apart from receiving the parts.

import { performance } from "node:perf_hooks";
import { pathAndQuery, requirePositiveInt, requireString, sha256, type OriginApi } from "../common.js";

export interface PendingUpload {
  fileId: string;
  data: Buffer;
}

export interface Completed {
  fileId: string;
  deliveryPath: string;
  completeMs: number;
  /** performance.now() when complete-upload answered. */
  completedAt: number;
}

/** The seed's flow up to complete: initiate, every part base64 in JSON (4 in flight). */
export async function sendParts(api: OriginApi, data: Buffer, name: string, signal?: AbortSignal): Promise<PendingUpload> {
  const where = "POST /collections/upload/file";
  const init = await api.post("/collections/upload/file", { name, visibility: "Public", size: data.length, file_type: "other" }, signal);
  const fileId = requireString(init, "fileId", where);
  const chunkSize = requirePositiveInt(init, "chunk_size", where);
  const partCount = requirePositiveInt(init, "part_count", where);
  const prefix =
    `{"bucket":${JSON.stringify(requireString(init, "bucket", where))},"key":${JSON.stringify(requireString(init, "key", where))},` +
    `"uploadId":${JSON.stringify(requireString(init, "uploadId", where))},"fileId":${JSON.stringify(fileId)},"partNumber":`;
  let next = 1;
  const worker = async (): Promise<void> => {
    for (let part = next++; part <= partCount; part = next++) {
      const start = (part - 1) * chunkSize;
      const b64 = data.toString("base64", start, Math.min(start + chunkSize, data.length));
      await api.post("/collections/upload/file-progress", [`${prefix}${part},"body":"`, b64, `"}`], signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, partCount) }, () => worker()));
  return { fileId, data };
}

/** complete-upload, timed; checks the SHA-256 the origin answers. */
export async function complete(api: OriginApi, up: PendingUpload, signal?: AbortSignal): Promise<Completed> {
  const t0 = performance.now();
  const record = await api.post("/collections/upload/complete-upload", { file_id: up.fileId }, signal);
  const completedAt = performance.now();
  if (typeof record.sha256 !== "string" || record.sha256.toLowerCase() !== sha256(up.data)) {
    throw new Error(`complete-upload: sha256 ${JSON.stringify(record.sha256)} does not match the uploaded bytes`);
  }
  const deliveryPath = pathAndQuery(requireString(record, "delivery_url", "complete-upload"));
  return { fileId: up.fileId, deliveryPath, completeMs: completedAt - t0, completedAt };
}
