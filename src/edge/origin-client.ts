/**
 * How an edge reaches its origin: plain http (on a private network only) or https, checked
 * against the system's CAs or, with COFFER_ORIGIN_CA, against that PEM bundle alone. Every
 * request an edge makes to the origin goes through this: the feed, acknowledgements, the
 * snapshot, re-checks and the bytes.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { ConfigError } from '../config/config.js';

export interface OriginClient {
  /** The origin's address, without a trailing slash. */
  readonly url: string;
  readonly secure: boolean;
  readonly host: string;
  readonly port: number;
  /** The CA bundle given, if any (else the system's CAs are trusted). */
  readonly ca: Buffer | undefined;
  agent(opts: http.AgentOptions): http.Agent;
  request(path: string, opts: http.RequestOptions, onResponse?: (res: http.IncomingMessage) => void): http.ClientRequest;
  get(path: string, opts: http.RequestOptions, onResponse?: (res: http.IncomingMessage) => void): http.ClientRequest;
}

/** Checks `--origin`: an http:// or https:// address without a path; returns it without a trailing slash. */
export function originAddress(originUrl: string): string {
  const origin = originUrl.replace(/\/+$/, '');
  // Credentials given in the address are refused, never repeated (stderr often ends up in logs).
  const shown = originUrl.replace(/\/\/.*@/, '//…@');
  if (!/^https?:\/\/[^/?#@]+$/.test(origin)) {
    throw new ConfigError(`--origin must be the origin's address without a path or credentials, such as https://origin.internal:8443 or http://10.0.0.5:8080, not "${shown}". Plain http belongs on a private network only.`);
  }
  try {
    new URL(origin);
  } catch {
    throw new ConfigError(`--origin "${shown}" is not a valid address.`);
  }
  return origin;
}

export function originClient(originUrl: string, caPath: string | undefined): OriginClient {
  const url = originAddress(originUrl);
  const parsed = new URL(url);
  const secure = parsed.protocol === 'https:';
  let ca: Buffer | undefined;
  if (secure && caPath) {
    try {
      ca = readFileSync(caPath);
    } catch (err) {
      throw new ConfigError(`COFFER_ORIGIN_CA: cannot read the CA bundle "${caPath}": ${(err as Error).message}`);
    }
  }
  const tlsOptions: { ca?: Buffer } = ca ? { ca } : {};
  // TLS loads only for an https origin: an edge on a private network never needs it.
  const https = secure ? process.getBuiltinModule('node:https') : null;
  const lib = https ?? http;
  return {
    url,
    secure,
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: Number(parsed.port || (secure ? 443 : 80)),
    ca,
    agent: (opts) => (https ? new https.Agent({ ...opts, ...tlsOptions }) : new http.Agent(opts)),
    request: (path, opts, onResponse) => lib.request(url + path, { ...tlsOptions, ...opts }, onResponse),
    get: (path, opts, onResponse) => lib.get(url + path, { ...tlsOptions, ...opts }, onResponse),
  };
}
