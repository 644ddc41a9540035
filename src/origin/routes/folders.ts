import * as api from '../../core/api.js';
import { endpoint } from './endpoint.js';

export const createFolder = endpoint({
  path: '/collections/folder/create',
  tag: 'Folders',
  summary: 'Create a folder',
  description: 'Folder names are unique among the sub-folders of one parent (409 folder_exists). A key without "read" is answered {folder_id, created: true}, not the record.',
  body: api.CreateFolderRequest,
  response: api.CreateFolderResponse,
  handle: (s, body, caller) => s.tree.create(caller, body),
});

export const getFolder = endpoint({
  path: '/collections/folder/get',
  tag: 'Folders',
  summary: 'Read a folder',
  body: api.FolderIdRequest,
  response: api.FolderRecord,
  handle: (s, body, caller) => s.tree.get(caller, body.folder_id),
});

export const updateFolder = endpoint({
  path: '/collections/folder/update',
  tag: 'Folders',
  summary: 'Rename, move or switch the visibility of a folder',
  description: 'Takes effect at every edge before it answers. Moving a folder into its own subtree is 409 cycle. A key without "read" is answered {folder_id, updated: true}, not the record.',
  body: api.UpdateFolderRequest,
  response: api.UpdateFolderResponse,
  handle: (s, body, caller) => s.tree.update(caller, body),
});

export const deleteFolder = endpoint({
  path: '/collections/folder/delete',
  tag: 'Folders',
  summary: 'Delete a folder',
  description: 'Without "recursive": true a non-empty folder is 409 folder_not_empty. A recursive delete removes every file below it, aborting unfinished uploads.',
  body: api.DeleteFolderRequest,
  response: api.DeleteFolderResponse,
  handle: (s, body, caller) => s.tree.delete(caller, body),
});

export const list = endpoint({
  path: '/collections/list',
  tag: 'Folders',
  summary: 'List a folder',
  description: 'Folders first, then ready files; limit counts both. Page with next_cursor until it is null; paging never skips or repeats an entry.',
  body: api.ListRequest,
  response: api.ListResponse,
  handle: (s, body, caller) => s.listing.list(caller, body),
});

export const search = endpoint({
  path: '/collections/search',
  tag: 'Folders',
  summary: 'Search a folder by name',
  description: 'Direct children of one folder whose name contains the query, without regard to case, ordered by name.',
  body: api.SearchRequest,
  response: api.SearchResponse,
  handle: (s, body, caller) => s.listing.search(caller, body),
});
