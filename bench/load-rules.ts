// What a delivery answer may be, given what the clients were told and when.
//
// Every change is known only as a call window [sent, answered]: the change took effect at
// some moment inside it, and every edge applied it before the answer (the origin waits for
// them). So at a moment inside a window both the old and the new state are possible; a
// request spanning [start, end] may meet any state possible at some moment of it.

export type Vis = "Public" | "Private";

export interface Change {
  kind: "visibility" | "delete";
  /** The new visibility, for a visibility change. */
  value?: Vis;
  sent: number;
  answered: number;
}

export interface FileHistory {
  fileId: string;
  size: number;
  sha256: string;
  /** Visibility at upload. */
  initial: Vis;
  /** When complete-upload answered: requests start after it. */
  completedAt: number;
  /** Changes whose call was answered, in order (one client changes a file at a time). */
  changes: Change[];
  /** When a change call failed, its outcome is unknown from then on: later answers are not judged. */
  unknownFrom: number | null;
}

export interface Delivery {
  fileId: string;
  edge: number;
  signed: boolean;
  start: number;
  end: number;
  /** 0 when no answer came (a network error). */
  status: number;
  errorCode: string | null;
  bytes: number;
  /** SHA-256 of the whole body, for a 200. */
  sha256: string | null;
  /** The connection failed while the body arrived. */
  broken: boolean;
}

/** A state over the interval of times where it may be the current one. */
interface Span {
  from: number;
  to: number;
  vis: Vis | "deleted";
}

function spans(h: FileHistory): Span[] {
  const out: Span[] = [];
  let current: Vis | "deleted" = h.initial;
  let from = -Infinity;
  for (const c of h.changes) {
    const next: Vis | "deleted" = c.kind === "delete" ? "deleted" : c.value!;
    // The old state may last until the answer; the new one may start at the sending.
    out.push({ from, to: c.answered, vis: current });
    current = next;
    from = c.sent;
  }
  out.push({ from, to: Infinity, vis: current });
  return out;
}

/** The states the file may have been in at some moment of [start, end]. */
export function possibleStates(h: FileHistory, start: number, end: number): Set<Vis | "deleted"> {
  const states = new Set<Vis | "deleted">();
  for (const s of spans(h)) if (s.from <= end && s.to >= start) states.add(s.vis);
  return states;
}

export type Verdict = { ok: true } | { ok: false; rule: string };

/**
 * Judges one answer. 503 (an edge without a lease), and network failures that no change
 * of the file explains, are errors, not rule violations, and are counted by the caller.
 */
export function judge(h: FileHistory, d: Delivery): Verdict | null {
  if (d.status === 503) return null;
  const states = possibleStates(h, d.start, d.end);
  if (d.status === 0 || d.broken) {
    // An edge stops a response as soon as its file may no longer be served to it; a
    // failure without such a change is an error.
    return states.has("deleted") || (!d.signed && states.has("Private")) ? { ok: true } : null;
  }
  if (h.unknownFrom !== null && d.end >= h.unknownFrom) return { ok: true };
  const deleteAnswered = h.changes.find((c) => c.kind === "delete")?.answered;
  if (d.status === 200) {
    if (deleteAnswered !== undefined && d.start > deleteAnswered) return { ok: false, rule: "200 for a request sent after the delete call was answered" };
    if (!d.signed && !states.has("Public")) return { ok: false, rule: "200 for an unsigned request while the file was Private throughout" };
    if (!states.has("Public") && !states.has("Private")) return { ok: false, rule: "200 for a file deleted throughout the request" };
    if (d.bytes !== h.size || d.sha256 !== h.sha256) return { ok: false, rule: `bytes returned (${d.bytes}) do not hash to the file's SHA-256` };
    return { ok: true };
  }
  if (d.status === 404) {
    return states.has("deleted") ? { ok: true } : { ok: false, rule: "404 for a file that existed throughout the request" };
  }
  if (d.status === 403 && !d.signed) {
    // signature_required: only when the file may have been Private (or gone: the edge may answer either).
    return states.has("Private") || states.has("deleted") ? { ok: true } : { ok: false, rule: `403 ${d.errorCode ?? ""} for an unsigned request while the file was Public throughout` };
  }
  return { ok: false, rule: `${d.status} ${d.errorCode ?? ""} for a ${d.signed ? "signed" : "plain"} request` };
}
