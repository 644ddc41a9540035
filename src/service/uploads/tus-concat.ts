/**
 * tus concatenation (contract §9): a final upload made of finished partial uploads, in order.
 * Partial uploads may have any lengths, so their bytes rarely line up with 5 MiB parts: the
 * final upload is an upload of its own whose parts are filled by reading the partial uploads'
 * joined objects one after the other (one part in memory at a time). It then becomes a ready
 * file like any other, and the partial uploads are removed.
 */
import { errors } from '../../core/errors.js';
import type { Caller } from '../../core/access.js';
import type { TusUploads } from './tus.js';
import { askOf, type Found, type TusCreate, type TusState } from './tus-meta.js';

/** More than any client sends; bounds the work one request can ask for. */
export const MAX_PARTIALS = 1000;

async function* concatenated(t: TusUploads, partials: Found[]): AsyncGenerator<Buffer> {
  for (const p of partials) {
    for await (const chunk of await t.c.blobs.read(p.file.blob_key)) yield chunk as Buffer;
  }
}

export async function concatenate(t: TusUploads, caller: Caller, req: TusCreate, fileIds: string[]): Promise<TusState> {
  if (fileIds.length === 0 || fileIds.length > MAX_PARTIALS) {
    throw errors.invalidRequest(`Upload-Concat: final names 1 to ${MAX_PARTIALS} partial uploads.`, 'Upload-Concat');
  }
  const partials: Found[] = [];
  for (const id of fileIds) {
    const found = await t.findOwn(t.c.meta.read, caller, id);
    if (found.tus.kind !== 'partial') throw errors.invalidRequest(`The upload ${id} is not a partial upload (Upload-Concat: partial).`, 'Upload-Concat');
    const state = await t.stateOf(found);
    if (state.offset < state.length) {
      throw errors.invalidRequest(`The partial upload ${id} has ${state.offset} of its ${state.length} bytes; finish it first.`, 'Upload-Concat', { file_id: id, offset: state.offset });
    }
    await t.finish(caller, found, state);
    partials.push(found);
  }
  const length = partials.reduce((n, p) => n + p.file.size, 0);
  if (length > t.c.opts.maxFileSize) throw errors.fileTooLarge(t.c.opts.maxFileSize);
  // Limits (a grant's too) apply here as at any creation; the final upload is the file.
  const file = await t.createFile(caller, askOf(caller, req.metadata, length), 'final', req.rawMetadata, fileIds.join(' '));
  const held = await t.c.meta.tryExclusive(`tus:${file.id}`, async () => {
    const found = await t.find(t.c.meta.read, caller, file.id);
    await t.writeFrom(found, await t.stateOf(found), { body: concatenated(t, partials), checksum: null, length });
    return t.stateOf(await t.find(t.c.meta.read, caller, file.id));
  });
  if (!held.ran) throw errors.uploadBusy();
  if (held.value.offset !== length) throw errors.unavailable('The partial uploads could not be copied whole; create the final upload again.');
  const state = await t.finish(caller, await t.find(t.c.meta.read, caller, file.id), held.value);
  await t.removePartials(fileIds);
  return state;
}
