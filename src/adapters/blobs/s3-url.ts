/**
 * `COFFER_BLOB_STORE=s3://BUCKET?endpoint=URL&region=REGION&force_path_style=true`, read into
 * the S3 client's settings with errors that say what is wrong.
 */
export interface S3Settings {
  bucket: string;
  /** The service's URL; unset means AWS S3 itself. */
  endpoint?: string;
  /** Unset: the SDK's default chain (AWS_REGION, the shared config file). */
  region?: string;
  forcePathStyle: boolean;
}

const BUCKET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,253}[A-Za-z0-9]$/;
const KNOWN_PARAMS = new Set(['endpoint', 'region', 'force_path_style']);

function invalid(message: string): Error {
  return new Error(`COFFER_BLOB_STORE: ${message} Expected s3://BUCKET?endpoint=https://…&region=…&force_path_style=true (every parameter optional).`);
}

/** Reads `s3://BUCKET?endpoint=…&region=…&force_path_style=true`, with an error that says what is wrong. */
export function parseS3Url(value: string): S3Settings {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${JSON.stringify(value)} is not a URL.`);
  }
  if (url.protocol !== 's3:') throw invalid(`the scheme must be s3://, not ${url.protocol}//.`);
  if (url.username || url.password) throw invalid('credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.');
  if (url.port) throw invalid('the bucket name cannot have a port; put the server in endpoint=….');
  const bucket = decodeURIComponent(url.hostname);
  if (!BUCKET_NAME.test(bucket)) throw invalid(`${JSON.stringify(bucket)} is not a bucket name (3 to 255 letters, digits, dots, hyphens or underscores).`);
  if (url.pathname !== '' && url.pathname !== '/') throw invalid(`a key prefix (${url.pathname}) is not supported; use a bucket of its own.`);
  for (const name of url.searchParams.keys()) {
    if (!KNOWN_PARAMS.has(name)) throw invalid(`unknown parameter "${name}".`);
  }
  const settings: S3Settings = { bucket, forcePathStyle: false };
  const endpoint = url.searchParams.get('endpoint');
  if (endpoint !== null) {
    let parsed: URL;
    try {
      parsed = new URL(endpoint);
    } catch {
      throw invalid(`endpoint ${JSON.stringify(endpoint)} is not a URL.`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw invalid(`endpoint must be an http:// or https:// URL, not ${JSON.stringify(endpoint)}.`);
    settings.endpoint = endpoint;
  }
  const region = url.searchParams.get('region');
  if (region !== null) {
    if (!/^[a-z0-9-]{1,64}$/.test(region)) throw invalid(`region ${JSON.stringify(region)} is not a region name.`);
    settings.region = region;
  }
  const pathStyle = url.searchParams.get('force_path_style');
  if (pathStyle !== null) {
    if (!['true', 'false', '1', '0'].includes(pathStyle)) throw invalid(`force_path_style must be true or false, not ${JSON.stringify(pathStyle)}.`);
    settings.forcePathStyle = pathStyle === 'true' || pathStyle === '1';
  }
  return settings;
}
