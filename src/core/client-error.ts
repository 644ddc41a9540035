import type { Duplex } from 'node:stream';
import { ERROR_CODES, type ErrorCode } from './error-codes.js';

/**
 * The answer to a request Node's HTTP parser refused (a bad request line, a folded header,
 * headers over the limit), in the contract's error shape rather than the server's own.
 */
export function clientErrorResponse(parserCode: string | undefined): string {
  const [reason, code, message]: [string, ErrorCode, string] =
    parserCode === 'HPE_HEADER_OVERFLOW'
      ? ['Request Header Fields Too Large', 'headers_too_large', ERROR_CODES.headers_too_large.message]
      : parserCode === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['Request Timeout', 'request_timeout', ERROR_CODES.request_timeout.message]
        : ['Bad Request', 'invalid_request', 'The request is not valid HTTP/1.1.'];
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify({ error: { code, message, details: {} } });
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** How long a refused client has to read its answer before its connection is closed regardless. */
const ANSWER_GRACE_MS = 1000;

/**
 * Answers a refused request and closes its connection. Ending alone would leave the socket
 * half-open for as long as the client kept sending (a header trickled every few seconds), and
 * it would go on counting against the listener's caps: the socket is destroyed once the
 * client has had a moment to read the answer.
 */
export function answerClientError(err: { code?: string }, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(clientErrorResponse(err.code));
  setTimeout(() => socket.destroy(), ANSWER_GRACE_MS).unref();
}
