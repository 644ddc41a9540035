/**
 * The page: signs in to the application, asks it for an upload grant for the chosen file,
 * and hands the file and the grant to a Web Worker, which sends the bytes straight to
 * Coffer. The page never sees an access key: the application keeps it.
 */
const $ = (id) => document.getElementById(id);

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
function formatBytes(n) {
  let unit = 0;
  while (n >= 1024 && unit < UNITS.length - 1) {
    n /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${n.toFixed(1)} ${UNITS[unit]}`;
}

const showError = (message) => ($('error').textContent = message);
const showStatus = (message) => ($('status').textContent = message);

/** A call to this page's own application (the session cookie goes along by itself). */
async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(answer.error?.message ?? `The application answered ${res.status}.`);
  return answer;
}

let maxSize = 0;

$('login').addEventListener('submit', async (event) => {
  event.preventDefault();
  showError('');
  try {
    const me = await post('/login', { user: $('user').value, password: $('password').value });
    maxSize = me.max_size;
    $('who').textContent = `Signed in as ${me.user}. Files up to ${formatBytes(maxSize)} go to your own Private folder.`;
    $('login').hidden = true;
    $('upload').hidden = false;
  } catch (err) {
    showError(err.message);
  }
});

// The literal `new Worker(new URL(…), …)` form is what Vite bundles as a worker.
const worker = new Worker(new URL('./upload-worker.js', import.meta.url), { type: 'module', name: 'coffer-upload' });

/** Runs one upload in the worker; resolves with the file's record from Coffer. */
function uploadInWorker(file, grant, url) {
  return new Promise((resolve, reject) => {
    const onMessage = (event) => {
      const msg = event.data;
      if (msg.type === 'progress') {
        $('progress').max = msg.total || 1;
        $('progress').value = msg.loaded;
        showStatus(`${formatBytes(msg.loaded)} of ${formatBytes(msg.total)} sent`);
        return;
      }
      worker.removeEventListener('message', onMessage);
      if (msg.type === 'done') resolve(msg.record);
      else reject(new Error(msg.message));
    };
    worker.addEventListener('message', onMessage);
    worker.postMessage({ file, grant, url });
  });
}

$('upload').addEventListener('submit', async (event) => {
  event.preventDefault();
  const file = $('file').files[0];
  if (!file) return;
  showError('');
  $('record').hidden = true;
  if (file.size > maxSize) return showError(`That file is ${formatBytes(file.size)}; the limit is ${formatBytes(maxSize)}.`);
  $('start').disabled = true;
  $('progress').value = 0;
  try {
    // The application decides whether this user may upload, and hands over a grant for one file.
    const { grant, coffer_url: url } = await post('/upload-grant', { name: file.name, size: file.size });
    const record = await uploadInWorker(file, grant, url);
    // Tell the application which file arrived; it checks the file is this user's before keeping it.
    const kept = await post('/uploaded', { file_id: record.file_id });
    $('record').textContent = JSON.stringify(kept, null, 2);
    $('record').hidden = false;
    showStatus(`Uploaded ${file.name}: ${kept.status}.`);
  } catch (err) {
    showError(err.message);
  } finally {
    $('start').disabled = false;
  }
});
