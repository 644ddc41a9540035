/**
 * scripts/prerequisites.mjs, which `npm test` runs first, on a made-up system
 * (COFFER_TEST_SYSTEM_ROOT): with every tool it is silent; lacking any, a user who cannot
 * install gets one line naming the packages and the apt-get command; root with apt-get gets
 * them installed (one update, then only the missing ones). The apt-get here is a stand-in
 * that records its calls: nothing is ever installed for real.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/prerequisites.mjs');
const IS_ROOT = process.getuid?.() === 0;
/** An unprivileged user for the script when the tests run as root. */
const NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];

/** Each Debian package with the file that shows it is installed. */
const TOOLS: Array<[pkg: string, file: string]> = [
  ['awscli', 'usr/bin/aws'], ['rclone', 'usr/bin/rclone'], ['s3cmd', 'usr/bin/s3cmd'], ['python3-boto3', 'usr/bin/python3'],
  ['postgresql', 'usr/lib/postgresql/15/bin/postgres'], ['chromium', 'usr/bin/chromium'], ['prometheus', 'usr/bin/promtool'],
  ['curl', 'usr/bin/curl'], ['jq', 'usr/bin/jq'], ['openssl', 'usr/bin/openssl'], ['bsdutils', 'usr/bin/script'],
];

let base: string;
let n = 0;

async function executable(path: string, body = 'exit 0'): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
}

/** A system root holding every tool except those of `lacking`. */
async function system(lacking: string[] = []): Promise<string> {
  const root = join(base, `root-${++n}`);
  await mkdir(root, { mode: 0o755 });
  for (const [pkg, file] of TOOLS) if (!lacking.includes(pkg)) await executable(join(root, file));
  // python3 without boto3: the interpreter is there, the import fails.
  if (lacking.includes('python3-boto3')) await executable(join(root, 'usr/bin/python3'), 'exit 1');
  if (!lacking.includes('postgresql')) await executable(join(root, 'usr/lib/postgresql/15/bin/initdb'));
  return root;
}

/** A stand-in apt-get that logs its calls and, on install, puts each package's file in place. */
async function fakeApt(root: string, { fail = false } = {}): Promise<string> {
  const log = join(root, 'apt.log');
  const installs = TOOLS.map(([pkg, file]) => `    ${pkg}) mkdir -p "$(dirname "$ROOT/${file}")"; printf '#!/bin/sh\\nexit 0\\n' > "$ROOT/${file}"; chmod 755 "$ROOT/${file}" ;;`);
  await executable(join(root, 'usr/bin/apt-get'), [
    `ROOT='${root}'`, `echo "$DEBIAN_FRONTEND $*" >> '${log}'`, fail ? 'echo "E: Unable to locate package"; exit 100' : '',
    'if [ "$1" = install ]; then', '  for p in "$@"; do', '    case "$p" in', ...installs, '    esac', '  done', 'fi', 'mkdir -p "$ROOT/usr/lib/postgresql/15/bin"',
    'printf \'#!/bin/sh\\nexit 0\\n\' > "$ROOT/usr/lib/postgresql/15/bin/initdb"; chmod 755 "$ROOT/usr/lib/postgresql/15/bin/initdb"',
  ].join('\n'));
  return log;
}

/** Runs the script against `root`; `asUser` runs it as a user who cannot install. */
function prerequisites(root: string, asUser: boolean, extraEnv: Record<string, string> = {}): { code: number | null; stderr: string; stdout: string } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'COFFER_TEST_POSTGRES_URL' && k !== 'CHROMIUM_PATH'));
  const command = asUser && IS_ROOT ? ['setpriv', [...NOBODY, process.execPath, SCRIPT]] as const : [process.execPath, [SCRIPT]] as const;
  const r = spawnSync(command[0], [...command[1]], { env: { ...env, ...extraEnv, COFFER_TEST_SYSTEM_ROOT: root }, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'coffer-prereq-'));
  await chmod(base, 0o755);
});

afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe('npm test\'s prerequisites', () => {
  test('with every tool present it says nothing and lets the tests run', async () => {
    const r = prerequisites(await system(), true);
    expect(r).toEqual({ code: 0, stderr: '', stdout: '' });
  });

  test.each(TOOLS.map(([pkg]) => pkg))('lacking %s, a user who cannot install gets one line naming it and the command', async (pkg) => {
    const root = await system([pkg]);
    await fakeApt(root);
    const r = prerequisites(root, true);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `npm test needs Debian packages that are missing here: ${pkg}. Install them with "sudo apt-get install -y ${pkg}" `
      + '(npm test run as root installs them itself), then run npm test again.\n',
    );
    expect(await readFile(join(root, 'apt.log'), 'utf8').catch(() => '')).toBe('');
  });

  test('lacking several, the one line names them all', async () => {
    const r = prerequisites(await system(['awscli', 'postgresql', 'prometheus']), true);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('missing here: awscli postgresql prometheus.');
    expect(r.stderr).toContain('"sudo apt-get install -y awscli postgresql prometheus"');
  });

  test('another aws on PATH (say a pyenv shim) does not stand in for Debian\'s, which the tests call', async () => {
    const root = await system(['awscli']);
    await executable(join(root, 'elsewhere', 'aws'));
    const r = prerequisites(root, true, { PATH: `${join(root, 'elsewhere')}:${process.env.PATH ?? ''}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('missing here: awscli.');
  });

  test('as root without apt-get, the same one line', async () => {
    const r = prerequisites(await system(['rclone']), false);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('missing here: rclone.');
  });

  test.runIf(IS_ROOT)('as root with apt-get, it updates once and installs only what is missing, quietly', async () => {
    const root = await system(['s3cmd', 'python3-boto3', 'postgresql']);
    const log = await fakeApt(root);
    const r = prerequisites(root, false);
    expect(r.stderr).toBe('Installing the Debian packages the tests need: s3cmd python3-boto3 postgresql\n');
    expect(r.code).toBe(0);
    expect(await readFile(log, 'utf8')).toBe('noninteractive update -qq\nnoninteractive install -y -qq s3cmd python3-boto3 postgresql\n');
  });

  test.runIf(IS_ROOT)('as root, a failing apt-get ends in one line that says so and names the packages', async () => {
    const root = await system(['jq']);
    await fakeApt(root, { fail: true });
    const r = prerequisites(root, false);
    expect(r.code).toBe(1);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('apt-get update failed (E: Unable to locate package); npm test needs these Debian packages: jq.');
  });
});
