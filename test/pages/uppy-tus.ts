/**
 * The page of test/e2e/tus-uppy.test.ts, bundled for the browser by the test: Uppy
 * (@uppy/core + @uppy/tus, as an application would use them) uploading to Coffer's /tus with an
 * upload grant. The file's bytes come from a seed, so the test can compute its SHA-256.
 */
import Uppy from '@uppy/core';
import Tus from '@uppy/tus';
import { seededBytes } from './seeded-bytes.js';

interface PageState {
  progress: number;
  requests: Array<{ method: string; offset: string | null }>;
  fileId: string | null;
  done: boolean;
  error: string | null;
}

export function start(): void {
  const params = new URLSearchParams(location.search);
  const state: PageState = { progress: 0, requests: [], fileId: null, done: false, error: null };
  (window as unknown as { uploadState: PageState }).uploadState = state;
  const size = Number(params.get('size'));
  const file = new File([seededBytes(size, Number(params.get('seed')))], 'uppy.bin', { type: 'application/octet-stream', lastModified: 1_700_000_000_000 });
  const uppy = new Uppy({ autoProceed: false });
  uppy.use(Tus, {
    endpoint: `${params.get('origin')}/tus`,
    // The grant, never a key; Uppy keeps only the upload's URL for resuming (in localStorage).
    headers: { authorization: `Grant ${params.get('grant')}` },
    retryDelays: [0, 500, 1000],
    onBeforeRequest: (req) => {
      state.requests.push({ method: req.getMethod(), offset: req.getHeader('Upload-Offset') ?? null });
    },
    onAfterResponse: (_req, res) => {
      state.fileId ??= res.getHeader('Coffer-File-Id') ?? null;
    },
  });
  uppy.on('upload-progress', (_f, progress) => {
    state.progress = progress.bytesUploaded ?? 0;
  });
  uppy.on('complete', (result) => {
    state.done = (result.successful ?? []).length === 1;
    if (!state.done) state.error = JSON.stringify(result.failed?.map((f) => String(f.error)));
  });
  uppy.on('upload-error', (_f, err) => {
    state.error = String(err);
  });
  uppy.addFile({ name: file.name, type: file.type, data: file });
  void uppy.upload();
}

start();
