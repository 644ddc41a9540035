/** Pieces of the tus routes' OpenAPI descriptions. */
export const idParam = {
  type: 'object',
  properties: { id: { type: 'string', description: 'The upload\'s id: the file id it becomes.' } },
  required: ['id'],
} as const;

export const stateResponseHeaders = {
  'Upload-Offset': { type: 'string', description: 'Bytes of the upload kept so far.' },
  'Upload-Length': { type: 'string', description: 'The upload\'s size.' },
  'Upload-Expires': { type: 'string', description: 'When an unfinished upload is removed (HTTP date).' },
  'Coffer-File-Id': { type: 'string', description: 'The ready file, once the upload is one.' },
};
