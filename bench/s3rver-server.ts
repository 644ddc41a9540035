// The S3 side of `bench/upload.ts --storage postgres-s3`: test/helpers/s3.ts (s3rver with the
// helper's additions) in a process of its own, so its CPU is not charged to the benchmark client.
// Run as `node --import tsx bench/s3rver-server.ts`; prints one line with the endpoint and the
// COFFER_BLOB_STORE value of a fresh bucket, and stops (removing its directory) when stdin ends.
import { startS3 } from "../test/helpers/s3.js";

const s3 = await startS3();
const bucket = await s3.createBucket("bench");
process.stdout.write(`s3rver listening on ${s3.endpoint} blob-store ${s3.blobStoreUrl(bucket)}\n`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  s3.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGTERM", stop);
process.on("SIGINT", () => {}); // the benchmark decides when this ends
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
