#!/usr/bin/env node
/**
 * What the test suite needs that npm cannot bring: Debian's builds of outside clients and
 * servers, at the paths the tests call them by. `npm test` runs this first. As root with
 * apt-get, the missing packages are installed quietly (one `apt-get update`, then only those);
 * otherwise it stops at once with one line naming them and the command that installs them.
 *
 * COFFER_TEST_SYSTEM_ROOT (tests only) puts every path checked, apt-get included, under
 * another directory, so the checks can be tried on a made-up system.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = process.env.COFFER_TEST_SYSTEM_ROOT ?? '/';
const at = (path) => join(ROOT, path);

function executable(path) {
  try {
    accessSync(at(path), constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A command of Debian's, where packages put it (the tests call these paths, not whatever PATH finds first). */
const command = (name) => () => executable(`/usr/bin/${name}`) || executable(`/bin/${name}`);

/** Debian's PostgreSQL server binaries, as test/helpers/postgres.ts looks for them. */
function postgresServer() {
  if (process.env.COFFER_TEST_POSTGRES_URL) return true;
  let versions = [];
  try {
    versions = readdirSync(at('/usr/lib/postgresql'));
  } catch {
    return false;
  }
  return versions.some((v) => executable(`/usr/lib/postgresql/${v}/bin/postgres`) && executable(`/usr/lib/postgresql/${v}/bin/initdb`));
}

function boto3() {
  if (!executable('/usr/bin/python3')) return false;
  return spawnSync(at('/usr/bin/python3'), ['-c', 'import boto3'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
}

/** Each Debian package, with what shows it is there and, in short, which tests need it. */
const REQUIREMENTS = [
  { pkg: 'awscli', present: command('aws'), why: 'S3 interface tests and docs/s3.md' },
  { pkg: 'rclone', present: command('rclone'), why: 'S3 interface tests' },
  { pkg: 's3cmd', present: command('s3cmd'), why: 'S3 interface tests' },
  { pkg: 'python3-boto3', present: boto3, why: 'S3 interface tests' },
  { pkg: 'postgresql', present: postgresServer, why: 'metadata tests on PostgreSQL' },
  { pkg: 'chromium', present: () => (process.env.CHROMIUM_PATH ? executable(process.env.CHROMIUM_PATH) : command('chromium')()), why: 'Playground browser tests' },
  { pkg: 'prometheus', present: command('promtool'), why: 'promtool checks the metrics' },
  { pkg: 'curl', present: command('curl'), why: 'the README and docs/cli.md examples' },
  { pkg: 'jq', present: command('jq'), why: 'the README example' },
  { pkg: 'openssl', present: command('openssl'), why: 'the HTTPS origin test' },
  { pkg: 'bsdutils', present: command('script'), why: 'the CLI terminal test' },
];

const missing = () => REQUIREMENTS.filter((r) => !r.present()).map((r) => r.pkg);

function stop(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** The one line for someone who has to install the packages themselves. */
const installByHand = (pkgs) =>
  `npm test needs Debian packages that are missing here: ${pkgs.join(' ')}. `
  + `Install them with "sudo apt-get install -y ${pkgs.join(' ')}" (npm test run as root installs them itself), then run npm test again.`;

function canInstall() {
  return process.getuid?.() === 0 && executable('/usr/bin/apt-get');
}

/** Runs apt-get quietly; on failure, stops with its last line of output. */
function aptGet(args, pkgs) {
  const r = spawnSync(at('/usr/bin/apt-get'), args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status === 0) return;
  const last = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().split('\n').at(-1) || (r.error?.message ?? `exit ${r.status}`);
  stop(`apt-get ${args[0]} failed (${last}); npm test needs these Debian packages: ${pkgs.join(' ')}.`);
}

function main() {
  const needed = missing();
  if (needed.length === 0) return;
  if (!canInstall()) stop(installByHand(needed));
  process.stderr.write(`Installing the Debian packages the tests need: ${needed.join(' ')}\n`);
  aptGet(['update', '-qq'], needed);
  aptGet(['install', '-y', '-qq', ...needed], needed);
  const still = missing();
  if (still.length > 0) stop(`apt-get installed ${needed.join(' ')}, yet these are still not usable: ${still.join(' ')}; npm test needs them.`);
}

main();
