/**
 * A `fetch` for the SDK client built on XMLHttpRequest, only to learn how many bytes of a
 * request body have gone out: fetch reports nothing until the answer, so a 5 MiB part
 * would move the bar in 5 MiB steps. The SDK still does all the work (parts, retries,
 * resume); this is just its transport. Available in dedicated workers.
 */

/** Told as a body goes out; `done` once the request has ended either way. */
export type SendProgress = (request: { readonly url: string }, sent: number, total: number, done: boolean) => void;

function parseHeaders(raw: string): Headers {
  const headers = new Headers();
  for (const line of raw.trim().split(/[\r\n]+/)) {
    const i = line.indexOf(':');
    if (i > 0) {
      try {
        headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
      } catch {
        // A header the Headers class refuses is of no use to the client.
      }
    }
  }
  return headers;
}

const abortError = (signal: AbortSignal | null | undefined): unknown =>
  signal?.reason ?? new DOMException('The request was aborted.', 'AbortError');

export function xhrFetch(onSend: SendProgress): typeof fetch {
  return (input, init = {}) => new Promise<Response>((resolve, reject) => {
    const signal = init.signal;
    if (signal?.aborted) return reject(abortError(signal));
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const xhr = new XMLHttpRequest();
    const token = { url };
    let finished = false;
    const finish = () => {
      if (finished) return false;
      finished = true;
      signal?.removeEventListener('abort', onAbort);
      onSend(token, 0, 0, true);
      return true;
    };
    const onAbort = () => xhr.abort();
    xhr.open(init.method ?? 'GET', url);
    xhr.responseType = 'arraybuffer';
    // Same-origin requests carry cookies anyway; 'include' is the only mode that needs this.
    xhr.withCredentials = init.credentials === 'include';
    new Headers(init.headers).forEach((value, name) => xhr.setRequestHeader(name, value));
    xhr.upload.onprogress = (e) => {
      if (!finished) onSend(token, e.loaded, e.lengthComputable ? e.total : 0, false);
    };
    xhr.onload = () => {
      if (!finish()) return;
      const empty = xhr.status === 204 || xhr.status === 205 || xhr.status === 304;
      resolve(new Response(empty ? null : (xhr.response as ArrayBuffer), {
        status: xhr.status, statusText: xhr.statusText, headers: parseHeaders(xhr.getAllResponseHeaders()),
      }));
    };
    // The same failure fetch gives: a TypeError, which the client reports as a network error.
    xhr.onerror = () => finish() && reject(new TypeError('Network request failed'));
    xhr.ontimeout = () => finish() && reject(new TypeError('Network request timed out'));
    xhr.onabort = () => finish() && reject(abortError(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    xhr.send((init.body ?? null) as XMLHttpRequestBodyInit | null);
  });
}
