import * as api from '../../core/api-access.js';
import { FileIdRequest } from '../../core/api.js';
import { endpoint } from './endpoint.js';

export const createKey = endpoint({
  path: '/collections/keys/create',
  tag: 'Keys',
  summary: 'Create a key',
  description: 'A key with scopes (read, write, admin), optionally confined to a folder and expiring. The key is in this answer only; it is stored hashed. Needs "admin"; only the root key makes "admin" keys.',
  body: api.CreateKeyRequest,
  response: api.CreateKeyResponse,
  handle: (s, body, caller) => s.credentials.createKey(caller, body),
});

export const listKeys = endpoint({
  path: '/collections/keys/list',
  tag: 'Keys',
  summary: 'List keys',
  description: 'Every key the caller reaches, without its secret. Needs "admin".',
  body: api.ListKeysRequest,
  response: api.ListKeysResponse,
  handle: (s, _body, caller) => s.credentials.listKeys(caller),
});

export const revokeKey = endpoint({
  path: '/collections/keys/revoke',
  tag: 'Keys',
  summary: 'Revoke a key',
  description: 'The key fails at every origin from the moment this answers, and so do the upload grants it made. Needs "admin".',
  body: api.RevokeKeyRequest,
  response: api.RevokeKeyResponse,
  handle: (s, body, caller) => s.credentials.revokeKey(caller, body.key_id),
});

export const createGrant = endpoint({
  path: '/collections/upload/grant',
  tag: 'Upload',
  summary: 'Create an upload grant',
  description: 'A credential for a browser: "Authorization: Grant <grant>" on the upload calls and /tus only, within the folder, visibility, size, content types, count and lifetime given. Needs "write".',
  body: api.CreateGrantRequest,
  response: api.CreateGrantResponse,
  handle: (s, body, caller) => s.credentials.createGrant(caller, body),
});

export const revokeLinks = endpoint({
  path: '/collections/file/revoke-links',
  tag: 'Links',
  summary: 'Revoke a file\'s links',
  description: 'Every signed link issued for the file so far answers 403 link_revoked at every edge before this answers; links made afterwards work. Needs "write".',
  body: FileIdRequest,
  response: api.RevokeLinksResponse,
  handle: (s, body, caller) => s.links.revokeLinks(caller, body.file_id),
});
