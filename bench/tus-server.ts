// Reference tus server for bench/upload.ts.
//
// Usage: node --import tsx bench/tus-server.ts <directory>
//
// Serves the tus protocol under /files/ with @tus/file-store writing into
// <directory>, listens on 127.0.0.1 with an OS-assigned port and prints one
// line `tus listening on http://127.0.0.1:PORT/files/` once it accepts
// connections. It exits when its stdin closes, so it cannot outlive the
// benchmark process that spawned it.
import http from "node:http";
import { FileStore } from "@tus/file-store";
import { Server } from "@tus/server";

const directory = process.argv[2];
if (!directory) {
  process.stderr.write("usage: tus-server.ts <directory>\n");
  process.exit(2);
}

const tus = new Server({
  path: "/files",
  datastore: new FileStore({ directory }),
});

const server = http.createServer((req, res) => {
  tus.handle(req, res).catch((err: unknown) => {
    process.stderr.write(`tus handler error: ${String(err)}\n`);
    if (!res.headersSent) res.statusCode = 500;
    res.end();
  });
});

server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  if (addr === null || typeof addr === "string") {
    process.stderr.write("unexpected server address\n");
    process.exit(1);
  }
  process.stdout.write(`tus listening on http://127.0.0.1:${addr.port}/files/\n`);
});

// Parent gone (or deliberately closed our stdin): shut down.
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();
