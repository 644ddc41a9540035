/**
 * One upload manager for the signed-in session, so uploads keep going and stay in view
 * while the user is on another page (Keys) and back; dropped at sign-out.
 */
import { csrfToken } from '../api.js';
import { createUploadManager, type UploadManager } from './manager.js';

let shared: UploadManager | null = null;

export const sessionUploads = (): UploadManager => (shared ??= createUploadManager(csrfToken));

export function dropSessionUploads(): void {
  shared = null;
}
