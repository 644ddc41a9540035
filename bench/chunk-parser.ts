/**
 * The JSON chunk parser on 8 MiB bodies, plain base64 and the same length written entirely as
 * `\u00XX` escapes (a client may send either), against the peer any JSON server uses:
 * `JSON.parse` of the whole body, then `Buffer.from(body, "base64")`. The streaming parser
 * holds no whole body; the goal is that escapes cost it at most 2x what they cost the peer.
 *
 *   npm run bench:parser [-- --rounds 5]
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { readChunkBody } from "../src/origin/chunk-body.js";
import { MiB, positiveNumber } from "./common.js";

const LIMIT = 8 * MiB;
const { values } = parseArgs({ options: { rounds: { type: "string" } } });
const rounds = positiveNumber(values.rounds, 5, "--rounds", true);

function body(escaped: boolean): Buffer {
  const perChar = escaped ? 6 : 1;
  const data = randomBytes(Math.floor((LIMIT - 64) / perChar / 4) * 3);
  const b64 = data.toString("base64");
  const text = escaped ? b64.replace(/./g, (c) => `\\u00${c.charCodeAt(0).toString(16).padStart(2, "0")}`) : b64;
  return Buffer.from(`{"fileId":"x","body":"${text}"}`, "latin1");
}

async function* pieces(text: Buffer): AsyncGenerator<Buffer> {
  for (let at = 0; at < text.length; at += 64 * 1024) yield text.subarray(at, at + 64 * 1024);
}

/** CPU milliseconds for one parse, checked to decode the whole body. */
async function parseCpuMs(text: Buffer): Promise<number> {
  let written = 0;
  const writer = { bytesWritten: 0, async write(c: Buffer) { written += c.length; }, async discard() {} };
  const before = process.cpuUsage();
  const result = await readChunkBody(pieces(text), async () => writer, LIMIT);
  const used = process.cpuUsage(before);
  if (result.invalidBase64 || written === 0) throw new Error("the body did not decode");
  return (used.user + used.system) / 1000;
}

/** CPU milliseconds for the peer: the whole body parsed at once. */
function peerCpuMs(text: Buffer): number {
  const before = process.cpuUsage();
  const bytes = Buffer.from((JSON.parse(text.toString("latin1")) as { body: string }).body, "base64");
  const used = process.cpuUsage(before);
  if (bytes.length === 0) throw new Error("the body did not decode");
  return (used.user + used.system) / 1000;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const plain = body(false);
const escaped = body(true);
const kinds = { plain, escaped };
const times: Record<string, { parser: number[]; peer: number[] }> = {};
for (const [name, text] of Object.entries(kinds)) {
  await parseCpuMs(text);
  peerCpuMs(text);
  times[name] = { parser: [], peer: [] };
  for (let r = 0; r < rounds; r++) {
    times[name]!.parser.push(await parseCpuMs(text));
    times[name]!.peer.push(peerCpuMs(text));
  }
}
console.log(`chunk parser, 8 MiB bodies, median CPU of ${rounds} rounds, node ${process.version}`);
for (const [name, t] of Object.entries(times)) {
  console.log(`${name.padEnd(8)} parser ${median(t.parser).toFixed(0).padStart(4)} ms   JSON.parse + base64 ${median(t.peer).toFixed(0).padStart(4)} ms`);
}
const ratio = median(times.escaped!.parser) / median(times.escaped!.peer);
console.log(`target: escapes, parser CPU <= 2 x JSON.parse + base64   ${ratio.toFixed(2)}  ${ratio <= 2 ? "PASS" : "FAIL"}`);
