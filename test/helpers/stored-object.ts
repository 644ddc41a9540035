/** Reads a ready file's bytes straight from the embedded blob store (dataDir/blobs/objects/files/<file_id>). */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The object is either one file, or a directory of its parts `1`…`n` with a
 * `manifest.json` ({size, sha256, parts: [sizes]}); both give back the whole bytes.
 */
export async function readStoredObject(dataDir: string, fileId: string): Promise<Buffer> {
  const path = join(dataDir, 'blobs', 'objects', 'files', fileId);
  const info = await stat(path);
  if (info.isFile()) return readFile(path);
  if (!info.isDirectory()) throw new Error(`${path} is neither a file nor a directory`);
  const manifest = JSON.parse(await readFile(join(path, 'manifest.json'), 'utf8')) as { size: number; parts: number[] };
  const parts = await Promise.all(manifest.parts.map((_, i) => readFile(join(path, String(i + 1)))));
  parts.forEach((p, i) => {
    if (p.length !== manifest.parts[i]) throw new Error(`${path}/${i + 1} holds ${p.length} bytes; its manifest says ${manifest.parts[i]}`);
  });
  const bytes = Buffer.concat(parts);
  if (bytes.length !== manifest.size) throw new Error(`${path} holds ${bytes.length} bytes; its manifest says ${manifest.size}`);
  return bytes;
}
