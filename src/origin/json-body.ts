/**
 * JSON bodies are UTF-8 (RFC 8259): one that is not is refused, never decoded with its bad
 * bytes turned into U+FFFD, so a name is stored exactly as sent or not at all. The rest is
 * Fastify's own parser, with its guard against prototype poisoning.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { errors } from '../core/errors.js';

export function installStrictJson(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (!isUtf8(body as Buffer)) {
      done(errors.invalidRequest('The body is not valid UTF-8.'), undefined);
      return;
    }
    parse(request, (body as Buffer).toString('utf8'), done);
  });
}
