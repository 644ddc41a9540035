/**
 * The upload worker: the SDK's uploader (parts in parallel, retries, SHA-256 at the end)
 * with an upload grant in place of a key, straight to Coffer. It reports progress after
 * each part and the file's record at the end.
 */
import { CofferClient, CofferError } from 'coffer/sdk';

self.addEventListener('message', async (event) => {
  const { file, grant, url } = event.data;
  try {
    const coffer = new CofferClient({ url, grant });
    const record = await coffer.uploadFile(file, {
      // What the grant allows: Private, into the user's folder (the grant's own when none is named).
      visibility: 'Private',
      onProgress: (p) => self.postMessage({ type: 'progress', loaded: p.loaded, total: p.total }),
    });
    self.postMessage({ type: 'done', record });
  } catch (err) {
    const message = err instanceof CofferError ? `${err.message} (${err.code})` : String(err?.message ?? err);
    self.postMessage({ type: 'failed', message });
  }
});
