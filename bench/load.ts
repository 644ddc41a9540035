// `npm run bench:load`: the load test at full scale (see bench/README.md and
// bench/load-core.ts). Prints throughput, latency per endpoint, errors, peak RSS of every
// process and the result of the correctness checks; exits 1 on any error or violation.

import os from "node:os";
import { parseArgs } from "node:util";
import { DEFAULT_ENTRY, KiB, MiB, UsageError, fmt, installExitHandlers, log, positiveNumber, releaseWatchdog, renderTable } from "./common.js";
import { runLoad, type LoadReport } from "./load-core.js";

const HELP = `Usage: npm run bench:load -- [options]

  --uploads N          concurrent uploads (default 200)
  --min-size KIB       smallest upload in KiB (default 1)
  --max-size MIB       largest upload in MiB (default 64)
  --downloaders N      concurrent download connections, over all edges (default 64)
  --switchers N        clients switching visibility and deleting (default 10)
  --seconds S          the mixed phase lasts at least this long, and until every upload is done (default 60)
  --edges N            edge processes (default 3)
  --parts-in-flight N  upload parts in flight across all uploads (default 32)
  --seed N             seed of the upload sizes (default 1)
  --coffer-entry PATH  the CLI to run (default dist/cli/main.js)
  --tmp-dir DIR        where the data directories and sources go (default the OS temp dir)
  --keep-data          keep them
  --json               the report as JSON on stdout`;

function options() {
  const { values } = parseArgs({
    options: {
      uploads: { type: "string" }, "min-size": { type: "string" }, "max-size": { type: "string" }, downloaders: { type: "string" },
      switchers: { type: "string" }, seconds: { type: "string" }, edges: { type: "string" }, "parts-in-flight": { type: "string" },
      seed: { type: "string" }, "coffer-entry": { type: "string" }, "tmp-dir": { type: "string" }, "keep-data": { type: "boolean" },
      json: { type: "boolean" }, help: { type: "boolean" },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  return {
    json: values.json === true,
    load: {
      uploads: positiveNumber(values.uploads, 200, "--uploads", true),
      minSize: Math.round(positiveNumber(values["min-size"], 1, "--min-size") * KiB),
      maxSize: Math.round(positiveNumber(values["max-size"], 64, "--max-size") * MiB),
      downloaders: positiveNumber(values.downloaders, 64, "--downloaders", true),
      switchers: positiveNumber(values.switchers, 10, "--switchers", true),
      seconds: positiveNumber(values.seconds, 60, "--seconds"),
      edges: positiveNumber(values.edges, 3, "--edges", true),
      partsInFlight: positiveNumber(values["parts-in-flight"], 32, "--parts-in-flight", true),
      seed: positiveNumber(values.seed, 1, "--seed", true),
      entry: values["coffer-entry"] ?? DEFAULT_ENTRY,
      tmpDir: values["tmp-dir"] ?? os.tmpdir(),
      keepData: values["keep-data"] === true,
      log,
    },
  };
}

/** The report as text lines. */
function renderReport(r: LoadReport): string[] {
  const lines: string[] = [];
  const o = r.options;
  lines.push(`load: ${o.uploads} uploads of ${fmt(o.minSize / KiB, 0)} KiB to ${fmt(o.maxSize / MiB, 0)} MiB, ${o.downloaders} downloaders, ${o.switchers} switchers, ${o.edges} edges, ${fmt(r.durationS, 1)} s`);
  lines.push(`throughput: uploads ${fmt(r.uploadMiBps, 1)} MiB/s (${fmt(r.uploadedBytes / MiB, 1)} MiB), deliveries ${fmt(r.downloadMiBps, 1)} MiB/s (${fmt(r.downloadedBytes / MiB, 1)} MiB), ${r.deliveries} answers (${fmt(r.deliveriesPerS, 1)}/s); ${r.switches} visibility switches, ${r.deletes} deletes`);
  lines.push("");
  lines.push(...renderTable([["endpoint", "calls", "failed", "p50 ms", "p99 ms"], ...r.endpoints.map((e) => [e.endpoint, String(e.count), String(e.failed), fmt(e.p50Ms, 1), fmt(e.p99Ms, 1)])]));
  lines.push("");
  lines.push(...renderTable([["process", "peak RSS MB"], ...Object.entries(r.peakRssMb).map(([name, mb]) => [name, fmt(mb, 1)])]));
  lines.push("");
  lines.push(`answers: ${Object.entries(r.answers).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}: ${n}`).join(", ")}`);
  lines.push(`errors: ${r.errorCount} (goal 0)`);
  for (const e of r.errors) lines.push(`  ${e}`);
  lines.push(`rule violations and stored data mismatches: ${r.violationCount}`);
  for (const v of r.violations) lines.push(`  ${v}`);
  lines.push(r.errorCount === 0 && r.violationCount === 0 ? "RESULT: PASS" : "RESULT: FAIL");
  return lines;
}

async function main(): Promise<void> {
  installExitHandlers();
  const { json, load } = options();
  const report = await runLoad(load);
  releaseWatchdog();
  const text = renderReport(report).join("\n");
  if (json) {
    process.stderr.write(`${text}\n`);
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    process.stdout.write(`${text}\n`);
  }
  process.exitCode = report.errorCount === 0 && report.violationCount === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  log(err instanceof UsageError ? `${err.message}\n\n${HELP}` : `LOAD TEST FAILED: ${(err as Error).stack ?? String(err)}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
