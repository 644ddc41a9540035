/**
 * The client commands of `coffer` (contract §8): they talk to a running service through
 * the SDK. Data goes to standard output; progress and messages to standard error.
 */
import type { Command } from 'commander';
import { type FileRecord, type FolderRecord, type ListResponse } from '../sdk/index.js';
import {
  CliError, clientFor, defaultIo, folderArg, isCode, json, visibilityArg, wholeNumber, type ClientFlags, type Io,
} from './common.js';
import { download } from './download.js';
import { formatBytes, formatTime, safeText, table } from './format.js';
import { upload, type UploadFlags } from './upload.js';

export { CliError, clientFor, folderArg, visibilityArg, type ClientFlags, type Io } from './common.js';

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
  kind === 'folder' ? `folder ${safeText((r as FolderRecord).path)}` : `file ${safeText(r.name)}`;

// ls

interface ListFlags extends ClientFlags {
  json?: boolean;
  sort?: string;
  order?: string;
}

function visibilityCell(r: FileRecord | FolderRecord): string {
  return r.effective_visibility === r.visibility ? r.visibility : `${r.effective_visibility} (inherited)`;
}

async function ls(folder: string | undefined, flags: ListFlags, io: Io): Promise<void> {
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
  for (const f of listing.files) rows.push([f.file_id, safeText(f.name), formatBytes(f.size), visibilityCell(f), formatTime(f.updated_at)]);
  io.stdout.write(table(rows) + '\n');
}

// mkdir

interface MkdirFlags extends ClientFlags {
  parent?: string;
  private?: boolean;
  parents?: boolean;
  json?: boolean;
}

async function mkdir(name: string, flags: MkdirFlags, io: Io): Promise<void> {
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

async function mv(id: string, target: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const to = folderArg(target);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, folder_id: to }),
    () => client.updateFolder({ folder_id: id, parent_id: to }));
  await changed(io, flags, result, (item) => `moved ${item} into ${to === null ? 'the root' : to}`);
}

async function renameCmd(id: string, name: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, name }),
    () => client.updateFolder({ folder_id: id, name }));
  await changed(io, flags, result, (item) => `renamed: now ${item}`);
}

async function visibilityCmd(id: string, value: string, flags: ClientFlags & { json?: boolean }, io: Io): Promise<void> {
  const visibility = visibilityArg(value);
  const client = await clientFor(flags, io);
  const result = await fileOrFolder(id,
    () => client.updateFile({ file_id: id, visibility }),
    () => client.updateFolder({ folder_id: id, visibility }));
  await changed(io, flags, result, (item) => `${item} is now ${visibility}`);
}

// rm

async function rmCmd(id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }, io: Io): Promise<void> {
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

async function link(id: string, flags: ClientFlags & { expiry?: string; download?: boolean; json?: boolean }, io: Io): Promise<void> {
  const client = await clientFor(flags, io);
  const expiry = wholeNumber(flags.expiry ?? '3600', '--expiry', 1, 86_400);
  if (flags.download) {
    const result = await client.downloadUrl({ file_id: id, expiry });
    if (flags.json) return json(io, result);
    io.stdout.write(result.download_url + '\n');
    return;
  }
  const file = await client.getFile(id);
  const result = await client.createLink({ file_id: id, file_type: file.file_type, expiry });
  if (flags.json) return json(io, result);
  io.stdout.write(result.presigned_url + '\n');
}

// Registration

const CLIENT_COMMANDS = new Set(['upload', 'ls', 'mkdir', 'mv', 'rename', 'visibility', 'rm', 'link', 'download', 'grant', 'revoke-links']);

/** A word that can only be an id (the service makes 22 base64url characters), not an option. */
const DASH_ID = /^-[A-Za-z0-9_-]{15,}$/;

/**
 * Ids are base64url, so one in 64 begins with "-", and the option parser would take
 * `coffer rm -s6_feJC3ikD4iHykAo6_w` for an unknown option. For a client command, a word
 * of that form that is no option of the command (nor an option's value) is an operand:
 * the arguments are rewritten as OPTIONS -- OPERANDS, in their order.
 */
export function dashIdsAsOperands(program: Command, argv: string[]): string[] {
  const cmd = program.commands.find((c) => c.name() === argv[2]);
  const rest = argv.slice(3);
  if (!cmd || !CLIENT_COMMANDS.has(cmd.name()) || !rest.some((a) => DASH_ID.test(a))) return argv;
  const options: string[] = [];
  const operands: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--') {
      operands.push(...rest.slice(i + 1));
      break;
    }
    const name = arg.startsWith('--') && arg.includes('=') ? arg.slice(0, arg.indexOf('=')) : arg;
    const option = cmd.options.find((o) => o.short === name || o.long === name);
    if (option) {
      options.push(arg);
      if (option.required && name === arg && i + 1 < rest.length) options.push(rest[++i]!);
    } else if (DASH_ID.test(arg) || !arg.startsWith('-') || arg === '-') {
      operands.push(arg);
    } else {
      options.push(arg); // unknown: the parser reports it
    }
  }
  return [...argv.slice(0, 3), ...options, '--', ...operands];
}

export function clientOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', "the origin's address [COFFER_URL, default http://127.0.0.1:8080]")
    .option('--key <key>', 'the access key [COFFER_ACCESS_KEY; prefer the variable: options show up in process lists]');
}

export const examples = (...lines: string[]) => `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;

export function registerClientCommands(program: Command, io: Io = defaultIo()): void {
  clientOptions(program.command('upload').description('Upload files; a folder becomes folders, its files go inside.'))
    .argument('<paths...>', 'files and folders to upload')
    .option('--folder <id>', 'the folder to upload into (default: the root)')
    .option('--private', 'make the uploaded files and created folders Private')
    .option('--concurrency <n>', 'parts in flight at once (default 4)')
    .option('--json', 'print the uploaded file records as JSON')
    .option('--compat', 'send parts as base64 in JSON bodies, as every Coffer server takes them (default: raw bytes; a server without raw parts gets JSON anyway)')
    .addHelpText('after', examples(
      'coffer upload photo.jpg',
      'coffer upload ./site --folder 3kTQ0q2BWbcD9yqfXh4r1A --private',
      'coffer upload *.mp4 --concurrency 8 --json > uploaded.json',
      'coffer upload big.iso --compat',
    ) + '\nEach file prints one line: ID, URL, path (tab-separated). An interrupted upload resumes when run again.\n'
      + 'Parts go as raw bytes (a third fewer than base64); a server that answers 415 to them gets JSON from then on.\n')
    .action((paths: string[], flags: UploadFlags) => upload(paths, flags, io));

  clientOptions(program.command('ls').description('List a folder: its folders, then its files.'))
    .argument('[folder]', 'the folder id (default: the root)')
    .option('--sort <field>', 'name, created_at, updated_at or size (default name)')
    .option('--order <order>', 'asc or desc (default asc)')
    .option('--json', 'print the listing as JSON')
    .addHelpText('after', examples('coffer ls', 'coffer ls 3kTQ0q2BWbcD9yqfXh4r1A --sort size --order desc', 'coffer ls --json'))
    .action((folder: string | undefined, flags: ListFlags) => ls(folder, flags, io));

  clientOptions(program.command('mkdir').description('Create a folder; prints its id.'))
    .argument('<name>', 'the folder name (with -p, a path such as photos/2026)')
    .option('--parent <id>', 'the folder to create it in (default: the root)')
    .option('--private', 'make it Private: everything inside needs a signed link')
    .option('-p, --parents', 'create missing folders along a/b/c and reuse existing ones')
    .option('--json', 'print the folder record as JSON')
    .addHelpText('after', examples('coffer mkdir photos', 'coffer mkdir 2026 --parent 3kTQ0q2BWbcD9yqfXh4r1A --private', 'coffer mkdir -p photos/2026/summer'))
    .action((name: string, flags: MkdirFlags) => mkdir(name, flags, io));

  clientOptions(program.command('mv').description('Move a file or folder into another folder.'))
    .argument('<id>', 'the file or folder to move')
    .argument('<folder>', 'the folder to move it into; "root" for the root')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA 3kTQ0q2BWbcD9yqfXh4r1A', 'coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA root'))
    .action((id: string, folder: string, flags: ClientFlags & { json?: boolean }) => mv(id, folder, flags, io));

  clientOptions(program.command('rename').description('Rename a file or folder; its URLs and links keep working.'))
    .argument('<id>', 'the file or folder')
    .argument('<name>', 'the new name')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer rename 7Yp1c0aT9Qm2xLr5Hk3VwA "holiday 2026.jpg"'))
    .action((id: string, name: string, flags: ClientFlags & { json?: boolean }) => renameCmd(id, name, flags, io));

  clientOptions(program.command('visibility').description('Make a file or folder Public or Private, at every edge before it returns.'))
    .argument('<id>', 'the file or folder')
    .argument('<visibility>', 'public or private')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer visibility 7Yp1c0aT9Qm2xLr5Hk3VwA private', 'coffer visibility 3kTQ0q2BWbcD9yqfXh4r1A public'))
    .action((id: string, value: string, flags: ClientFlags & { json?: boolean }) => visibilityCmd(id, value, flags, io));

  clientOptions(program.command('rm').description('Delete a file, or a folder (-r: with everything inside), from storage and every edge.'))
    .argument('<id>', 'the file or folder')
    .option('-r, --recursive', 'delete a folder that is not empty, with everything inside')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', examples('coffer rm 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer rm -r 3kTQ0q2BWbcD9yqfXh4r1A'))
    .action((id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }) => rmCmd(id, flags, io));

  clientOptions(program.command('link').description('Print a signed, time-limited link to a file.'))
    .argument('<id>', 'the file')
    .option('--expiry <seconds>', 'how long the link works: 1–86400 (default 3600)')
    .option('--download', 'a link that makes browsers save the file under its name')
    .option('--json', 'print the full answer as JSON')
    .addHelpText('after', examples('coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA --expiry 900', 'curl -o photo.jpg "$(coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA)"'))
    .action((id: string, flags: ClientFlags & { expiry?: string; download?: boolean; json?: boolean }) => link(id, flags, io));

  clientOptions(program.command('download').description('Save a file from the delivery network, checking its SHA-256.'))
    .argument('<id>', 'the file')
    .option('-o, --output <path>', 'where to save it: a file, a folder, or - for standard output (default: ./NAME)')
    .option('-f, --force', 'replace ./NAME when it exists')
    .addHelpText('after', examples('coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o ~/Downloads/', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o - | tar -xz'))
    .action((id: string, flags: ClientFlags & { output?: string; force?: boolean }) => download(id, flags, io));
}
