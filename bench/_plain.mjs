import http from "node:http";
import { FileStore } from "@tus/file-store";
import { Server } from "@tus/server";
const tus = new Server({ path: "/files", datastore: new FileStore({ directory: "/tmp/tt" }) });
const s = http.createServer((q,r)=>tus.handle(q,r)).listen(0,"127.0.0.1",()=>{console.log("up")});
