/**
 * What the client commands for files and folders do (contract §8): they talk to a running
 * service through the SDK. Data goes to standard output; progress and messages to standard
 * error. The commands themselves are declared in commands.ts, which loads this on use.
 */
import { type FileRecord, type FolderRecord, type LinkVariant, type ListResponse } from '../sdk/index.js';
import { MAX_VARIANT_SIDE } from '../core/variants.js';
import {
  CliError, clientFor, folderArg, isCode, json, visibilityArg, wholeNumber, type ClientFlags, type Io,
} from './common.js';
import { formatBytes, formatTime, safeText, shownFileName, table } from './format.js';

const notFound = (id: string) => new CliError(`No file or folder has the id "${id}". List a folder with \`coffer ls\` to see the ids.`);

/** Runs the file form of a change, or the folder form when the id is not a file's. */
async function fileOrFolder<F, D>(id: string, onFile: () => Promise<F>, onFolder: () => Promise<D>): Promise<{ kind: 'file'; value: F } | { kind: 'folder'; value: D }> {
  try {
    return { kind: 'file', value: await onFile() };
  } catch (err) {
    if (!isCode(err, 'file_not_found')) throw err;
  }
  try {
    return { kind: 'folder', value: await onFolder() };
  } catch (err) {
    if (isCode(err, 'folder_not_found') && (err.details.field ?? 'folder_id') === 'folder_id' && err.details.folder_id === id) throw notFound(id);
    throw err;
  }
}

const describe = (kind: 'file' | 'folder', r: FileRecord | FolderRecord): string =>
  kind === 'folder' ? `folder ${safeText((r as FolderRecord).path)}` : `file ${shownFileName(r.name)}`;

// ls

export interface ListFlags extends ClientFlags {
  json?: boolean;
  sort?: string;
  order?: string;
}

function visibilityCell(r: FileRecord | FolderRecord): string {
  return r.effective_visibility === r.visibility ? r.visibility : `${r.effective_visibility} (inherited)`;
}

export async function ls(folder: string | undefined, flags: ListFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const sort = flags.sort ?? 'name';
  if (!['name', 'created_at', 'updated_at', 'size'].includes(sort)) throw new CliError('--sort must be name, created_at, updated_at or size.');
  const order = flags.order ?? 'asc';
  if (!['asc', 'desc'].includes(order)) throw new CliError('--order must be asc or desc.');
  let all: ListResponse | null = null;
  for await (const page of client.listPages({ folder_id: folderArg(folder), limit: 1000, sort: sort as 'name', order: order as 'asc' })) {
    if (all === null) all = { ...page, folders: [...page.folders], files: [...page.files] };
    else {
      all.folders.push(...page.folders);
      all.files.push(...page.files);
    }
  }
  const listing = all!;
  listing.next_cursor = null;
  if (flags.json) return json(io, listing);
  const where = listing.folder ? `${safeText(listing.folder.path)} (${visibilityCell(listing.folder)})` : '/ (root)';
  io.stderr.write(`${where}: ${listing.folders.length} folder(s), ${listing.files.length} file(s)\n`);
  if (listing.folders.length + listing.files.length === 0) return;
  const rows = [['ID', 'NAME', 'SIZE', 'VISIBILITY', 'MODIFIED']];
  for (const f of listing.folders) rows.push([f.folder_id, safeText(f.name) + '/', '-', visibilityCell(f), formatTime(f.updated_at)]);
  for (const f of listing.files) rows.push([f.file_id, shownFileName(f.name), formatBytes(f.size), visibilityCell(f), formatTime(f.updated_at)]);
  io.stdout.write(table(rows) + '\n');
}

// mkdir

export interface MkdirFlags extends ClientFlags {
  parent?: string;
  private?: boolean;
  parents?: boolean;
  json?: boolean;
}

export async function mkdir(name: string, flags: MkdirFlags, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const visibility = flags.private ? 'Private' : 'Public';
  let parentId = folderArg(flags.parent);
  const names = flags.parents ? name.split('/').filter((n) => n.trim() !== '') : [name];
  if (names.length === 0) throw new CliError('Give the folder a name.');
  let folder: FolderRecord | null = null;
  for (const part of names) {
    try {
      folder = await client.createFolder({ name: part, visibility, parent_id: parentId });
      io.stderr.write(`created folder ${safeText(folder.path)} (${folder.visibility})\n`);
    } catch (err) {
      if (!flags.parents || !isCode(err, 'folder_exists') || typeof err.details.folder_id !== 'string') throw err;
      folder = await client.getFolder(err.details.folder_id);
    }
    parentId = folder.folder_id;
  }
  if (flags.json) json(io, folder);
  else io.stdout.write(`${folder!.folder_id}\n`);
}

// mv, rename, visibility

async function changed(io: Io, flags: { json?: boolean }, result: { kind: 'file' | 'folder'; value: FileRecord | FolderRecord }, what: (item: string) => string): Promise<void> {
  io.stderr.write(`${what(describe(result.kind, result.value))}\n`);
  if (flags.json) json(io, result.value);
}

export async function mv(id: string, target: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const to = folderArg(target);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, folder_id: to }),
    () => client.updateFolder({ folder_id: id, parent_id: to }));
  await changed(io, flags, result, (item) => `moved ${item} into ${to === null ? 'the root' : to}`);
}

export async function renameCmd(id: string, name: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, name }),
    () => client.updateFolder({ folder_id: id, name }));
  await changed(io, flags, result, (item) => `renamed: now ${item}`);
}

export async function visibilityCmd(id: string, value: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const visibility = visibilityArg(value);
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, visibility }),
    () => client.updateFolder({ folder_id: id, visibility }));
  await changed(io, flags, result, (item) => `${item} is now ${visibility}`);
}

// rm

export async function rmCmd(id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  let result;
  try {
    result = await fileOrFolder(id,
      () => client.deleteFile(id),
      () => client.deleteFolder({ folder_id: id, recursive: flags.recursive === true }));
  } catch (err) {
    if (isCode(err, 'folder_not_empty')) {
      const files = Number(err.details.files ?? 0);
      const folders = Number(err.details.folders ?? 0);
      throw new CliError(`The folder is not empty (${files} file(s), ${folders} folder(s) directly inside). Run \`coffer rm -r ${id}\` to delete it with everything inside.`);
    }
    throw err;
  }
  if (result.kind === 'file') io.stderr.write(`deleted file ${id}\n`);
  else io.stderr.write(`deleted folder ${id}: ${result.value.deleted_folders} folder(s) and ${result.value.deleted_files} file(s) in all\n`);
  if (flags.json) json(io, result.value);
}

// link

export interface LinkFlags extends ClientFlags {
  expiry?: string;
  download?: boolean;
  json?: boolean;
  width?: string;
  height?: string;
  fit?: string;
  format?: string;
  quality?: string;
}

/** The variant the options ask for (contract §13), or undefined; the service checks the values. */
function variantOf(flags: LinkFlags): LinkVariant | undefined {
  const variant: LinkVariant = {};
  if (flags.width !== undefined) variant.w = wholeNumber(flags.width, '--width', 1, MAX_VARIANT_SIDE);
  if (flags.height !== undefined) variant.h = wholeNumber(flags.height, '--height', 1, MAX_VARIANT_SIDE);
  if (flags.quality !== undefined) variant.q = wholeNumber(flags.quality, '--quality', 1, 100);
  if (flags.fit !== undefined) variant.fit = flags.fit.trim().toLowerCase();
  if (flags.format !== undefined) variant.format = flags.format.trim().toLowerCase().replace(/^jpg$/, 'jpeg');
  return Object.keys(variant).length > 0 ? variant : undefined;
}

export async function link(id: string, flags: LinkFlags, io: Io): Promise<void> {
  const variant = variantOf(flags);
  if (variant && flags.download) throw new CliError('--download and the variant options (--width, --height, --fit, --format, --quality) go in separate links.');
  const client = await clientFor(flags, io);
  const expiry = wholeNumber(flags.expiry ?? '3600', '--expiry', 1, 86_400);
  if (flags.download) {
    const result = await client.downloadUrl({ file_id: id, expiry });
    if (flags.json) return json(io, result);
    io.stdout.write(result.download_url + '\n');
    return;
  }
  const file = await client.getFile(id);
  const result = await client.createLink({ file_id: id, file_type: file.file_type, expiry, ...(variant ? { variant } : {}) });
  if (flags.json) return json(io, result);
  io.stdout.write(result.presigned_url + '\n');
}
