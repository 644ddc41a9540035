/**
 * The client commands of `coffer` as the parser knows them: names, arguments, options, help.
 * What each one does loads when it runs, so the service's processes (`coffer origin`, `edge`,
 * `serve`) never load the SDK or the client code, and keep that memory (docs/operations.md).
 */
import type { Command } from 'commander';
import { defaultIo, type ClientFlags, type Io } from './io.js';
import type { ListFlags, MkdirFlags } from './client.js';
import type { CreateFlags, GrantFlags } from './keys.js';
import type { UploadFlags } from './upload.js';
import type { SyncFlags } from './sync.js';
import type { LinkFlags } from './client.js';
import type { EdgesFlags } from './edges.js';

const files = () => import('./client.js');
const access = () => import('./keys.js');

/** `--scope read,write` and `--scope read --scope write` alike. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, ...value.split(',').map((s) => s.trim()).filter(Boolean)];

const CLIENT_COMMANDS = new Set(['upload', 'sync', 'ls', 'mkdir', 'mv', 'rename', 'visibility', 'rm', 'link', 'download', 'grant', 'revoke-links']);

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
    .action(async (paths: string[], flags: UploadFlags) => (await import('./upload.js')).upload(paths, flags, io));

  clientOptions(program.command('sync').description('Mirror a local directory into a folder: upload what is new or changed, skip what is the same, --delete what is gone.'))
    .argument('<dir>', 'the local directory; its contents go into FOLDER')
    .argument('[folder]', 'a folder id, or a path from the root such as /backups/site, created if missing (default: the root)')
    .option('--delete', 'delete files and folders in FOLDER that are not in DIR (after the uploads, and only if none failed)')
    .option('--dry-run', 'change nothing: print what would be uploaded, replaced, deleted and created')
    .option('--private', 'make the files and folders it creates Private (a replaced file keeps its visibility)')
    .option('--concurrency <n>', 'parts in flight at once (default 4)')
    .option('--json', 'print a summary as JSON: uploaded, unchanged, deleted, folders_created, failed')
    .addHelpText('after', examples(
      'coffer sync ./site /websites/site',
      'coffer sync ./photos 3kTQ0q2BWbcD9yqfXh4r1A --delete --dry-run',
      'coffer sync ./backup /backups --delete --json > sync.json',
    ) + '\nA file whose size and SHA-256 match the stored one is skipped, so running it again uploads only\n'
      + 'what changed; a changed file is uploaded anew and its old record deleted. An interrupted run\n'
      + 'resumes when run again. Like `rclone sync`, it copies the contents of DIR, not DIR itself.\n')
    .action(async (dir: string, folder: string | undefined, flags: SyncFlags) => (await import('./sync.js')).sync(dir, folder, flags, io));

  clientOptions(program.command('ls').description('List a folder: its folders, then its files.'))
    .argument('[folder]', 'the folder id (default: the root)')
    .option('--sort <field>', 'name, created_at, updated_at or size (default name)')
    .option('--order <order>', 'asc or desc (default asc)')
    .option('--json', 'print the listing as JSON')
    .addHelpText('after', examples('coffer ls', 'coffer ls 3kTQ0q2BWbcD9yqfXh4r1A --sort size --order desc', 'coffer ls --json'))
    .action(async (folder: string | undefined, flags: ListFlags) => (await files()).ls(folder, flags, io));

  clientOptions(program.command('mkdir').description('Create a folder; prints its id.'))
    .argument('<name>', 'the folder name (with -p, a path such as photos/2026)')
    .option('--parent <id>', 'the folder to create it in (default: the root)')
    .option('--private', 'make it Private: everything inside needs a signed link')
    .option('-p, --parents', 'create missing folders along a/b/c and reuse existing ones')
    .option('--json', 'print the folder record as JSON')
    .addHelpText('after', examples('coffer mkdir photos', 'coffer mkdir 2026 --parent 3kTQ0q2BWbcD9yqfXh4r1A --private', 'coffer mkdir -p photos/2026/summer'))
    .action(async (name: string, flags: MkdirFlags) => (await files()).mkdir(name, flags, io));

  clientOptions(program.command('mv').description('Move a file or folder into another folder.'))
    .argument('<id>', 'the file or folder to move')
    .argument('<folder>', 'the folder to move it into; "root" for the root')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA 3kTQ0q2BWbcD9yqfXh4r1A', 'coffer mv 7Yp1c0aT9Qm2xLr5Hk3VwA root'))
    .action(async (id: string, folder: string, flags: ClientFlags & { json?: boolean }) => (await files()).mv(id, folder, flags, io));

  clientOptions(program.command('rename').description('Rename a file or folder; its URLs and links keep working.'))
    .argument('<id>', 'the file or folder')
    .argument('<name>', 'the new name')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer rename 7Yp1c0aT9Qm2xLr5Hk3VwA "holiday 2026.jpg"'))
    .action(async (id: string, name: string, flags: ClientFlags & { json?: boolean }) => (await files()).renameCmd(id, name, flags, io));

  clientOptions(program.command('visibility').description('Make a file or folder Public or Private, at every edge before it returns.'))
    .argument('<id>', 'the file or folder')
    .argument('<visibility>', 'public or private')
    .option('--json', 'print the updated record as JSON')
    .addHelpText('after', examples('coffer visibility 7Yp1c0aT9Qm2xLr5Hk3VwA private', 'coffer visibility 3kTQ0q2BWbcD9yqfXh4r1A public'))
    .action(async (id: string, value: string, flags: ClientFlags & { json?: boolean }) => (await files()).visibilityCmd(id, value, flags, io));

  clientOptions(program.command('rm').description('Delete a file, or a folder (-r: with everything inside), from storage and every edge.'))
    .argument('<id>', 'the file or folder')
    .option('-r, --recursive', 'delete a folder that is not empty, with everything inside')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', examples('coffer rm 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer rm -r 3kTQ0q2BWbcD9yqfXh4r1A'))
    .action(async (id: string, flags: ClientFlags & { recursive?: boolean; json?: boolean }) => (await files()).rmCmd(id, flags, io));

  clientOptions(program.command('link').description('Print a signed, time-limited link to a file.'))
    .argument('<id>', 'the file')
    .option('--expiry <seconds>', 'how long the link works: 1–86400 (default 3600)')
    .option('--download', 'a link that makes browsers save the file under its name')
    .option('--width <px>', 'an image variant: at most this wide (1–4096)')
    .option('--height <px>', 'an image variant: at most this high (1–4096)')
    .option('--fit <fit>', 'how the variant fills width × height: inside (default), contain or cover')
    .option('--format <format>', 'the variant\'s format: webp, avif, jpeg, png, or auto (the best the browser accepts)')
    .option('--quality <q>', 'the variant\'s quality, 1–100')
    .option('--json', 'print the full answer as JSON')
    .addHelpText('after', examples(
      'coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA --expiry 900',
      'curl -o photo.jpg "$(coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA)"',
      'coffer link 7Yp1c0aT9Qm2xLr5Hk3VwA --width 400 --height 300 --fit cover --format webp --quality 80',
    ) + '\nThe variant options are signed with the link: it serves that variant of the image and no other.\n')
    .action(async (id: string, flags: LinkFlags) => (await files()).link(id, flags, io));

  clientOptions(program.command('download').description('Save a file from the delivery network, checking its SHA-256.'))
    .argument('<id>', 'the file')
    .option('-o, --output <path>', 'where to save it: a file, a folder, or - for standard output (default: ./NAME)')
    .option('-f, --force', 'replace ./NAME when it exists')
    .addHelpText('after', examples('coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o ~/Downloads/', 'coffer download 7Yp1c0aT9Qm2xLr5Hk3VwA -o - | tar -xz'))
    .action(async (id: string, flags: ClientFlags & { output?: string; force?: boolean }) => (await import('./download.js')).download(id, flags, io));
}

const KEY_ID = 'Yq3Xv0cJ9bTn2LrA5sWk1Q';
const FILE_ID = '7Yp1c0aT9Qm2xLr5Hk3VwA';

export function registerAccessCommands(program: Command, io: Io = defaultIo()): void {
  const keys = program.command('keys').description('Make, list and revoke access keys (needs a key with the "admin" scope, or the root key).')
    .addHelpText('after', `
Keys have scopes: read (get, list, search, download, links), write (uploads, folder and
file changes, grants, revoke-links), admin (keys). A key confined to a folder sees only
that folder and what is inside it. Only the root key makes admin keys; a key makes keys
only with scopes it holds, expiring no later than itself, and they stop working with it.
${examples(
    'coffer keys create --name backup-job --scope read,write --folder /photos --expires-in 30d',
    'coffer keys ls',
    `coffer keys revoke ${KEY_ID}`,
  )}`);

  clientOptions(keys.command('create').description('Make an access key; prints it once, alone, on standard output.'))
    .requiredOption('--name <name>', 'a label for the key, shown by `keys ls`')
    .requiredOption('--scope <scopes>', 'read, write and/or admin, comma-separated (or repeat --scope)', collect)
    .option('--folder <id|/path>', 'confine the key to this folder and what is inside it (default: every folder)')
    .option('--expires-in <duration>', 'seconds, or 15m, 12h, 30d (default: never; revoke it to end it)')
    .option('--json', 'print the whole record, key included, as JSON')
    .addHelpText('after', examples(
      'coffer keys create --name website --scope read',
      'coffer keys create --name uploader --scope read,write --folder /photos/2026 --expires-in 7d',
      'export COFFER_ACCESS_KEY=$(coffer keys create --name ci --scope write)',
    ) + '\nThe key is stored hashed: it cannot be shown again. A lost key is revoked and replaced.\n')
    .action(async (flags: CreateFlags) => (await access()).createKey(flags, io));

  clientOptions(keys.command('ls').description('List the access keys (never their secrets).'))
    .option('--json', 'print the key records as JSON')
    .addHelpText('after', examples('coffer keys ls', 'coffer keys ls --json'))
    .action(async (flags: ClientFlags & { json?: boolean }) => (await access()).listKeys(flags, io));

  clientOptions(keys.command('revoke').description('End an access key at once, at every origin.'))
    .argument('<key_id>', 'the key, as `keys ls` shows it (not the secret key itself)')
    .option('--json', 'print the answer as JSON')
    .addHelpText('after', examples(`coffer keys revoke ${KEY_ID}`))
    .action(async (keyId: string, flags: ClientFlags & { json?: boolean }) => (await access()).revokeKey(keyId, flags, io));

  clientOptions(program.command('grant').description('Make an upload grant: a credential a browser can upload with, within limits, and nothing else.'))
    .requiredOption('--max-size <size>', 'largest file, e.g. 1048576, 10MB, 5MiB')
    .option('--folder <id|/path>', 'where the uploads land (default: the root)')
    .option('--visibility <visibility>', 'public or private: the uploads must be this (default: either)')
    .option('--type <types>', 'allowed content types, e.g. image/* or application/pdf (comma-separated or repeated; default: any)', collect)
    .option('--expires-in <duration>', 'seconds, or 15m, 12h; at most 1d (default 1h)')
    .option('--max-files <n>', 'how many uploads it may start (default 1)')
    .option('--json', 'print {grant, expires_at} as JSON')
    .addHelpText('after', examples(
      'coffer grant --max-size 10MB',
      'coffer grant --folder /avatars --visibility public --type image/* --max-size 5MiB --expires-in 15m',
      'GRANT=$(coffer grant --max-size 100MB --max-files 5)',
    ) + '\nPrints the grant alone; it expires as shown on standard error. Hand it to a browser, which\nsends it as "Authorization: Grant …" (the SDK: new CofferClient({ url, grant })).\n')
    .action(async (flags: GrantFlags) => (await access()).grant(flags, io));

  clientOptions(program.command('revoke-links').description('Make every signed link issued so far for a file fail, at every edge; new links work.'))
    .argument('<file_id>', 'the file')
    .option('--json', 'print the answer as JSON')
    .addHelpText('after', examples(`coffer revoke-links ${FILE_ID}`, `coffer revoke-links ${FILE_ID} && coffer link ${FILE_ID}`))
    .action(async (fileId: string, flags: ClientFlags & { json?: boolean }) => (await access()).revokeLinks(fileId, flags, io));

  clientOptions(program.command('edges').description('List every edge the origin knows: parent, state, last seen, feed lag, cache, hit ratio, traffic (root key only).'))
    .option('--json', 'print the origin\'s answer as JSON (docs/api.md "Edges")')
    .addHelpText('after', examples('coffer edges', 'coffer edges --json | jq \'.edges[] | select(.answering | not) | .name\'', 'watch -n 5 coffer edges')
      + `
Columns: NAME (COFFER_EDGE_NAME), PARENT (the first parent edge it fills from, or origin),
STATE (live, catching up, or "!! NOT ANSWERING" when its lease lapsed or its reports
stopped for 30 s), LAST SEEN, LAG (feed events it has yet to apply), CACHE (used / capacity),
HIT (hits / (hits + misses) since it started), REQUESTS and SENT since it started.
An edge silent for an hour is no longer listed. Needs the root key.
`)
    .action(async (flags: EdgesFlags) => (await import('./edges.js')).listEdges(flags, io));
}
