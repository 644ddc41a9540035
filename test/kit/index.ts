/** The test kit: one of each helper the tests share. */
export { ManualClock } from './clock.js';
export { jsonClient, type JsonAnswer, type JsonClient, type PostInit } from './client.js';
export { sha256 } from './hash.js';
export { eventually, poll, sleep, waitFor, type PollOptions } from './poll.js';
export { upload, type UploadOptions } from './upload.js';
