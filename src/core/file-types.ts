/**
 * Which of the contract's file types a name or media type belongs to. Browser-safe: the
 * SDK, the command line and the Playground pick a default `file_type` with it.
 */
import type { FileType } from './records.js';

const BY_EXTENSION: Record<string, FileType> = {};
const group = (type: FileType, extensions: string) => {
  for (const ext of extensions.split(' ')) BY_EXTENSION[ext] = type;
};
group('image', 'jpg jpeg png gif webp avif heic heif bmp tif tiff svg ico jxl');
group('video', 'mp4 m4v mov webm mkv avi wmv flv mpg mpeg 3gp ogv ts');
group('audio', 'mp3 m4a aac wav flac ogg oga opus wma aiff mid midi');
group('document', 'pdf doc docx xls xlsx ppt pptx odt ods odp rtf txt md csv tsv epub pages numbers key json xml html htm');
group('archive', 'zip tar gz tgz bz2 tbz2 xz txz 7z rar zst lz4 br iso dmg jar');

const DOCUMENT_TYPES = /^(text\/|application\/(pdf|msword|rtf|json|xml|epub\+zip|vnd\.(openxmlformats|oasis|ms-)))/;
const ARCHIVE_TYPES = /^application\/(zip|x-tar|gzip|x-gzip|x-bzip2|x-xz|x-7z-compressed|vnd\.rar|x-rar-compressed|zstd)/;

/** The extension of a name, lower case, without the dot; empty when there is none. */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 || dot === name.length - 1 ? '' : name.slice(dot + 1).toLowerCase();
}

/** The media type decides when it is specific; the extension otherwise; `other` when neither says. */
export function fileTypeFor(name: string, contentType?: string | null): FileType {
  const type = (contentType ?? '').toLowerCase();
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('audio/')) return 'audio';
  if (ARCHIVE_TYPES.test(type)) return 'archive';
  if (DOCUMENT_TYPES.test(type)) return 'document';
  return BY_EXTENSION[extensionOf(name)] ?? 'other';
}

// RFC 9110 §8.3.1: type "/" subtype *( OWS ";" OWS [ parameter ] ), parameter values a token
// or a quoted string; ASCII only (no obs-text), so the value can always be sent as a header.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~]|\\\\[\\t -~])*"';
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*(?:${TOKEN}=(?:${TOKEN}|${QUOTED}))?)*$`);
/** Longer than any real media type; keeps stored records and headers small. */
export const MAX_CONTENT_TYPE_LENGTH = 255;

/** Whether a media type can be stored and later sent as a Content-Type header value as it is. */
export function isSendableContentType(value: string): boolean {
  return value.length <= MAX_CONTENT_TYPE_LENGTH && MEDIA_TYPE.test(value);
}
