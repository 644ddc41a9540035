/**
 * Outside S3 clients from Debian's packages (awscli, rclone, s3cmd, python3-boto3), unchanged,
 * pointed at a Coffer S3 endpoint with a key (contract §12). Each runs with its own HOME and
 * configuration in a temporary directory and none of the machine's AWS_* or RCLONE_* settings.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { S3Key } from './s3-api.js';

export interface ClientRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The commands of the Debian packages: `aws` elsewhere on PATH may be another version. */
export const AWS = '/usr/bin/aws';
export const RCLONE = '/usr/bin/rclone';
export const S3CMD = '/usr/bin/s3cmd';
export const PYTHON = '/usr/bin/python3';

export interface Clients {
  /** Environment for every client: HOME, configuration files and the key. */
  env: NodeJS.ProcessEnv;
  run(command: string, args: string[], opts?: { cwd?: string; timeoutMs?: number }): Promise<ClientRun>;
  /** Like run, but throws with the output when the command fails. */
  ok(command: string, args: string[], opts?: { cwd?: string; timeoutMs?: number }): Promise<string>;
}

/** Configuration for each client in `home`, for the S3 endpoint `endpoint` (http://host:port). */
export async function setUpClients(home: string, endpoint: string, key: S3Key): Promise<Clients> {
  const absent = [AWS, RCLONE, S3CMD, PYTHON].filter((path) => !existsSync(path));
  if (absent.length > 0) {
    throw new Error(`${absent.join(', ')} not found: npm test installs Debian's awscli, rclone, s3cmd and python3-boto3 when run as root (scripts/prerequisites.mjs).`);
  }
  await mkdir(join(home, '.aws'), { recursive: true });
  const awsConfig = join(home, '.aws', 'config');
  // Parts of 5 MiB from 5 MiB on, so that a small file already goes up and down in parts.
  await writeFile(awsConfig, [
    '[default]', 'region = us-east-1', 's3 =', '    addressing_style = path', '    multipart_threshold = 5MB', '    multipart_chunksize = 5MB', '',
  ].join('\n'));
  const host = new URL(endpoint).host;
  const s3cfg = join(home, '.s3cfg');
  await writeFile(s3cfg, [
    '[default]', `access_key = ${key.keyId}`, `secret_key = ${key.secret}`, `host_base = ${host}`, `host_bucket = ${host}`, 'use_https = False',
    'signature_v2 = False', 'bucket_location = us-east-1', 'check_ssl_certificate = False', '',
  ].join('\n'));
  const rcloneConfig = join(home, 'rclone.conf');
  await writeFile(rcloneConfig, '');
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(AWS_|RCLONE_|BOTO_|S3CMD|HTTPS?_PROXY|https?_proxy)/.test(k)));
  const env: NodeJS.ProcessEnv = {
    ...base, HOME: home, NO_PROXY: '*', no_proxy: '*',
    AWS_ACCESS_KEY_ID: key.keyId, AWS_SECRET_ACCESS_KEY: key.secret, AWS_DEFAULT_REGION: 'us-east-1', AWS_CONFIG_FILE: awsConfig,
    AWS_SHARED_CREDENTIALS_FILE: join(home, '.aws', 'credentials'), AWS_EC2_METADATA_DISABLED: 'true', AWS_PAGER: '',
    COFFER_S3_ENDPOINT: endpoint,
    // The boto3 scripts import test/helpers/coffer_s3.py: no __pycache__ left in the tree.
    PYTHONDONTWRITEBYTECODE: '1',
    RCLONE_CONFIG: rcloneConfig, RCLONE_CONFIG_COFFER_TYPE: 's3', RCLONE_CONFIG_COFFER_PROVIDER: 'Other', RCLONE_CONFIG_COFFER_ACCESS_KEY_ID: key.keyId,
    RCLONE_CONFIG_COFFER_SECRET_ACCESS_KEY: key.secret, RCLONE_CONFIG_COFFER_ENDPOINT: endpoint, RCLONE_CONFIG_COFFER_REGION: 'us-east-1',
    RCLONE_CONFIG_COFFER_FORCE_PATH_STYLE: 'true',
  };
  const run = (command: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}) => new Promise<ClientRun>((resolve) => {
    execFile(command, args, { env, cwd: opts.cwd ?? home, timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
  return {
    env,
    run,
    async ok(command, args, opts) {
      const r = await run(command, args, opts);
      if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${r.code}:\n${r.stdout}\n${r.stderr}`);
      return r.stdout;
    },
  };
}
