/** A small JSON client for an origin's API: POSTs with the key, answers with the status and parsed body. */
export interface JsonAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface PostInit {
  /** A header given as undefined is left out (a caller without the root key's Authorization). */
  headers?: Record<string, string | undefined>;
  /** Sent as the body in place of `body` as JSON. */
  raw?: string | Buffer;
}

export interface JsonClient {
  post<T = any>(path: string, body: unknown, init?: PostInit): Promise<JsonAnswer<T>>;
}

export function jsonClient(url: string, key: string): JsonClient {
  return {
    async post(path, body, init = {}) {
      const res = await fetch(url + path, {
        method: 'POST',
        headers: Object.fromEntries(Object.entries({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers })
          .filter((e): e is [string, string] => e[1] !== undefined)),
        body: typeof init.raw === 'string' || init.raw === undefined ? (init.raw ?? JSON.stringify(body)) : new Uint8Array(init.raw),
      });
      const text = await res.text();
      let parsed: any;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
  };
}
