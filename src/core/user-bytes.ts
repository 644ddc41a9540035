/**
 * How user bytes are shown, wherever they are served (the edge, contract §7; the S3 interface,
 * §12): inline only for media a browser renders without running anything, everything else as
 * an attachment in a sandbox. One rule, so the dialects cannot drift apart.
 */
import { isSendableContentType } from './file-types.js';

// Shown inline: media a browser renders without running anything. Everything else, HTML, SVG,
// XML, scripts and types nobody listed (multipart/x-mixed-replace among them), is an attachment.
const INLINE = /^(image\/(png|jpeg|gif|webp|avif|bmp|x-icon|vnd\.microsoft\.icon|apng|tiff)|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+|application\/pdf|text\/plain|text\/csv|application\/json)$/;

/** The media type alone, lower-cased: parameters never decide how a file is shown. */
const mediaType = (contentType: string): string => contentType.split(';', 1)[0]!.trim().toLowerCase();

/** Whether a type may be shown inline; anything else goes as an attachment with a sandbox. */
export const isInlineSafe = (contentType: string): boolean => INLINE.test(mediaType(contentType));
export const isActiveContent = (contentType: string): boolean => !isInlineSafe(contentType);

/** The type sent for a stored one: a value that could not be sent as a header becomes plain bytes. */
export const sendableType = (contentType: string): string => (isSendableContentType(contentType) ? contentType : 'application/octet-stream');

/** The policy of an answer whose type is not inline-safe: no script, no plugin, nothing loaded. */
export const SANDBOX_CSP = "sandbox; default-src 'none'";

/**
 * RFC 6266: a plain ASCII `filename` for old clients and the exact name as `filename*`. The
 * empty name (S3's object under a key ending in "/") gives no filename at all, never an empty
 * one: the browser then names the file after the URL's last segment, the file id.
 */
export function contentDisposition(name: string, attachment: boolean): string {
  if (name === '') return attachment ? 'attachment' : 'inline';
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${attachment ? 'attachment' : 'inline'}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
