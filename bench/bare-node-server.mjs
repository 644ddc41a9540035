// The floor of bench/delivery.ts: a bare Node `http` server answering every GET
// with the same bytes from memory and the same headers an edge hit sends, so the
// edge's CPU per request can be compared with what Node itself costs.
//
//   node bench/bare-node-server.mjs FILE HEADERS_JSON
//
// FILE holds the bytes; HEADERS_JSON is a flat [name, value, ...] list. Prints
// "bare node listening on http://127.0.0.1:PORT" once it accepts connections.

import fs from "node:fs";
import http from "node:http";

const [file, headersJson] = process.argv.slice(2);
if (!file || !headersJson) {
  process.stderr.write("usage: node bench/bare-node-server.mjs FILE HEADERS_JSON\n");
  process.exit(2);
}
const body = fs.readFileSync(file);
const headers = JSON.parse(headersJson);
if (!Array.isArray(headers) || headers.length % 2 !== 0 || !headers.every((h) => typeof h === "string")) {
  process.stderr.write("HEADERS_JSON must be a flat list of header names and values\n");
  process.exit(2);
}
// Content-Length is set from the bytes read here, whatever the list says.
const list = [];
for (let i = 0; i < headers.length; i += 2) {
  if (!/^content-length$/i.test(headers[i])) list.push(headers[i], headers[i + 1]);
}
list.push("Content-Length", String(body.length));

// The edge's keep-alive timeout, so idle connections are treated alike.
const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, ["Allow", "GET, HEAD", "Content-Length", "0"]).end();
    return;
  }
  res.writeHead(200, list);
  res.end(req.method === "HEAD" ? undefined : body);
});
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`bare node listening on http://127.0.0.1:${addr.port}\n`);
});
process.on("SIGTERM", () => process.exit(0));
