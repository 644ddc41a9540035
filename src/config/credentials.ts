/**
 * The access key and signing secret: taken from the configuration, or generated on the
 * first start and kept in the data directory, readable by the owner alone.
 */
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { newSecret } from '../core/ids.js';

export interface Credentials {
  accessKey: string;
  signingSecrets: string[];
}

interface StoredCredentials {
  access_key: string;
  signing_secret: string;
}

export const CREDENTIALS_FILE = 'credentials.json';

async function readStored(path: string): Promise<StoredCredentials | null> {
  try {
    const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<StoredCredentials>;
    if (typeof parsed.access_key === 'string' && typeof parsed.signing_secret === 'string') return parsed as StoredCredentials;
    throw new Error(`${path} is damaged: it must hold "access_key" and "signing_secret".`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function writeStored(path: string, creds: StoredCredentials): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const handle = await open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(creds, null, 2) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
}

/**
 * Resolves both credentials. `announce` is called once, with the generated values, the
 * first time they are made, so the operator sees them once and only then.
 */
export async function resolveCredentials(
  dataDir: string,
  configured: { accessKey: string | undefined; signingSecrets: string[] },
  announce: (generated: Partial<Record<'accessKey' | 'signingSecret', string>>) => void,
): Promise<Credentials> {
  if (configured.accessKey && configured.signingSecrets.length > 0) {
    return { accessKey: configured.accessKey, signingSecrets: configured.signingSecrets };
  }
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, CREDENTIALS_FILE);
  let stored = await readStored(path);
  const generated: Partial<Record<'accessKey' | 'signingSecret', string>> = {};
  if (!stored) {
    stored = { access_key: newSecret('coffer_key'), signing_secret: newSecret('coffer_secret') };
    await writeStored(path, stored);
    if (!configured.accessKey) generated.accessKey = stored.access_key;
    if (configured.signingSecrets.length === 0) generated.signingSecret = stored.signing_secret;
  }
  if (Object.keys(generated).length > 0) announce(generated);
  return {
    accessKey: configured.accessKey ?? stored.access_key,
    signingSecrets: configured.signingSecrets.length > 0 ? configured.signingSecrets : [stored.signing_secret],
  };
}
