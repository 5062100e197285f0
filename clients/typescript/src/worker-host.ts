// The worker host that infinisheet's in-memory log has and an event log over HTTP
// needs: infinisheet's SimpleEventLog posts a PendingWorkflowMessage to its
// workerHost for every entry marked `pending` (on addEntry and setMetadata), and
// EventSourcedSpreadsheetWorkflow, the worker, builds the snapshot and clears the mark.
// Over sheetlog the marks are in the server's log, so the host reads them from the
// sheet's event stream instead of from calls made in this process:
//
//   - It follows GET /v1/sheets/{id}/events from the start of the log: every entry
//     (with its current metadata), then live entries and `metadata` events (a PATCH).
//     An entry whose `pending` is set is a job. So jobs survive restarts: a host that
//     starts reads the marks left by any process, a crashed one included.
//   - Each job runs once across processes: before running, the host claims the entry
//     with a lease object in the blob store, written with S3's conditional writes
//     (`If-None-Match: *` to take a free claim, `If-Match: <etag>` to take over an
//     expired one or renew its own). The holder renews the lease while the workflow
//     runs; after claiming, the host reads the entry again and skips it if the mark is
//     gone (another host finished it). A host that loses a claim waits for the lease to
//     expire and looks again, so the job is not left behind if the holder dies.
//   - Jobs run one at a time, in seq order. A workflow that fails (its result is an
//     error, or it throws) is released and tried again after a backoff.
//
// Leases are judged by the hosts' clocks (`expires` is Date.now() + leaseMs): hosts
// sharing a sheet need clocks within a fraction of leaseMs of each other, as any lease.
import { describe, Http, type SheetlogConnection } from "./http.js";
import type { SequenceId, WorkflowId } from "./types.js";

/** infinisheet's PendingWorkflowMessage (infinisheet-types Workers.ts). */
export interface PendingWorkflowMessage {
  type: "PendingWorkflowMessage";
  workflow: WorkflowId;
  sequenceId: SequenceId;
}

/**
 * infinisheet's InfiniSheetWorker: what EventSourcedSpreadsheetWorkflow is given (it sets
 * `onReceiveMessage`). Its handler returns infinisheet's ResultAsync; the host awaits
 * any PromiseLike it returns and treats a result with `isErr()` true as a failure.
 */
export interface InfiniSheetWorker<MessageT> {
  onReceiveMessage: ((message: MessageT) => unknown) | undefined;
}

/** A worker: pass it to EventSourcedSpreadsheetWorkflow, and to the host. */
export class SheetlogWorker implements InfiniSheetWorker<PendingWorkflowMessage> {
  onReceiveMessage: ((message: PendingWorkflowMessage) => unknown) | undefined;
}

export interface SheetlogWorkerHostOptions extends SheetlogConnection {
  /** The sheet whose log holds the entries (SheetlogEventLog.sheetId). */
  sheetId: string;
  /** Blob key prefix of the claims: one object `<prefix><sheetId>/<seq>` per job. */
  claimPrefix?: string | undefined;
  /** How long a claim holds without renewal, ms. Default 60,000. */
  leaseMs?: number | undefined;
  /** This host's name in its claims. Default: random. */
  hostId?: string | undefined;
  /** First retry of a failed workflow after this many ms (doubling, at most 16x). Default 1,000. */
  retryMs?: number | undefined;
  /** Told of every job's end: "done", "skipped" (another host had it), or "failed". */
  onJob?: ((job: WorkerJobReport) => void) | undefined;
}

export interface WorkerJobReport {
  sequenceId: SequenceId;
  workflow: WorkflowId;
  outcome: "done" | "skipped" | "failed";
  error?: unknown;
}

interface ServerEntry {
  seq: number;
  pending?: string | null;
}

interface Claim {
  etag: string;
  holder: string;
  expires: number;
}

const DEFAULT_LEASE_MS = 60_000;
const RECONNECT_MS = 1_000;

export class SheetlogWorkerHost {
  readonly #http: Http;
  readonly #options: SheetlogWorkerHostOptions;
  readonly #worker: InfiniSheetWorker<PendingWorkflowMessage>;
  readonly #hostId: string;
  readonly #leaseMs: number;
  readonly #claimPrefix: string;
  readonly #fetch: typeof fetch;
  // Jobs to look at: seq -> workflow, run in seq order.
  readonly #queue = new Map<number, WorkflowId>();
  readonly #attempts = new Map<number, number>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #renewals = new Set<ReturnType<typeof setInterval>>();
  #abort: AbortController | undefined;
  #running = false;
  #stopped = true;
  #nextSeq = 0; // the stream's resume point: the first seq not yet seen
  #target = 0; // the log's next seq when start() was called
  #caughtUp: Promise<void> | undefined;
  #markCaughtUp: (() => void) | undefined;
  #idleWaiters: (() => void)[] = [];

  /**
   * @param worker  the worker EventSourcedSpreadsheetWorkflow was given (its handler
   *                runs each job)
   */
  constructor(options: SheetlogWorkerHostOptions, worker: InfiniSheetWorker<PendingWorkflowMessage>) {
    this.#options = options;
    this.#worker = worker;
    this.#http = new Http(options);
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#hostId = options.hostId ?? `host-${Math.random().toString(36).slice(2, 10)}`;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#claimPrefix = options.claimPrefix ?? "workflows/";
  }

  /** infinisheet's WorkerHost marker. */
  isHost(): boolean {
    return true;
  }

  /**
   * Starts following the sheet's log; resolves once the entries that existed at the
   * start have been read (their jobs queued, not necessarily run).
   */
  start(): Promise<void> {
    if (!this.#stopped) return this.#caughtUp ?? Promise.resolve();
    this.#stopped = false;
    this.#caughtUp = (async () => {
      const sheet = await this.#http.json("GET", this.#sheetPath());
      if (sheet.status !== 200) {
        this.#stopped = true;
        throw new Error(describe("reading the sheet", sheet.status, sheet.error));
      }
      this.#target = sheet.body.next_seq as number;
      this.#nextSeq = (sheet.body.first_seq as number | undefined) ?? 0;
      const reached = new Promise<void>((resolve) => {
        this.#markCaughtUp = resolve;
      });
      this.#checkCaughtUp();
      void this.#follow();
      await reached;
    })();
    return this.#caughtUp;
  }

  #checkCaughtUp(): void {
    if (this.#markCaughtUp && this.#nextSeq >= this.#target) {
      this.#markCaughtUp();
      this.#markCaughtUp = undefined;
    }
  }

  /**
   * Stops following and running jobs. A job running now finishes, but its lease is no
   * longer renewed (as if this process had died).
   */
  stop(): void {
    this.#stopped = true;
    this.#markCaughtUp?.();
    this.#markCaughtUp = undefined;
    this.#abort?.abort();
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    // A job still running keeps running, but its lease is no longer renewed: another
    // host takes the job over once it expires.
    for (const renewal of this.#renewals) clearInterval(renewal);
    this.#renewals.clear();
    this.#wakeIdle();
  }

  /** Resolves when no job is queued or running (for tests and orderly shutdowns). */
  idle(): Promise<void> {
    if (!this.#running && this.#queue.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  // --- the event stream ---

  async #follow(): Promise<void> {
    const base = this.#options.url.replace(/\/+$/, "");
    while (!this.#stopped) {
      const abort = new AbortController();
      this.#abort = abort;
      try {
        const headers: Record<string, string> = { accept: "text/event-stream" };
        if (this.#options.token) headers.authorization = "Bearer " + this.#options.token;
        const response = await this.#fetch(
          `${base}/v1/sheets/${encodeURIComponent(this.#options.sheetId)}/events?from=${this.#nextSeq}`,
          { headers, signal: abort.signal },
        );
        if (response.status === 404 || response.status === 410) {
          // Deleted, or truncated past our resume point: start over from the log's start.
          if (response.status === 404) {
            this.stop();
            return;
          }
          this.#nextSeq = 0;
          continue;
        }
        if (!response.ok || !response.body) throw new Error(`event stream: HTTP ${response.status}`);
        await this.#read(response.body);
      } catch {
        if (this.#stopped) return;
      }
      if (this.#stopped) return;
      await this.#sleep(RECONNECT_MS);
    }
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) type = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        this.#event(type, data.length ? JSON.parse(data.join("\n")) : null);
      }
    }
  }

  #event(type: string, data: unknown): void {
    if (type === "entry" || type === "metadata") {
      const entry = data as ServerEntry;
      if (type === "entry" && entry.seq >= this.#nextSeq) this.#nextSeq = entry.seq + 1;
      // Entry 0 is the server's own Snapshot entry, never an infinisheet job.
      if (entry.seq >= 1 && typeof entry.pending === "string" && entry.pending !== "") {
        this.#queue.set(entry.seq, entry.pending);
        void this.#drain();
      }
    } else if (type === "overflow") {
      const resume = (data as { resume_from?: number } | null)?.resume_from;
      if (typeof resume === "number") this.#nextSeq = resume;
    } else if (type === "gone" || type === "truncated") {
      // The log starts later now: anything queued before it is gone with it.
      const first = (data as { first_seq?: number } | null)?.first_seq ?? 0;
      for (const seq of [...this.#queue.keys()]) if (seq < first) this.#queue.delete(seq);
      if (type === "gone") this.#nextSeq = first;
    } else if (type === "deleted") {
      this.stop();
    }
    this.#checkCaughtUp();
  }

  // --- jobs ---

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (!this.#stopped && this.#queue.size > 0) {
        const seq = Math.min(...this.#queue.keys());
        const workflow = this.#queue.get(seq) as WorkflowId;
        this.#queue.delete(seq);
        await this.#runJob(seq, workflow);
      }
    } finally {
      this.#running = false;
      if (this.#queue.size === 0) this.#wakeIdle();
    }
  }

  async #runJob(seq: number, workflow: WorkflowId): Promise<void> {
    const sequenceId = BigInt(seq) - 1n;
    const report = (outcome: WorkerJobReport["outcome"], error?: unknown) =>
      this.#options.onJob?.({ sequenceId, workflow, outcome, error });
    const claim = await this.#claim(seq);
    if (claim === "held") {
      report("skipped");
      return;
    }
    if (claim === null) {
      this.#retryLater(seq, workflow);
      return;
    }
    let current = claim;
    try {
      // Still marked? (Another host may have run it between our reads.)
      const entry = await this.#http.json("GET", `${this.#sheetPath()}/entries/${seq}`);
      if (entry.status !== 200 || typeof entry.body?.pending !== "string" || entry.body.pending === "") {
        report("skipped");
        return;
      }
      const handler = this.#worker.onReceiveMessage;
      if (!handler) throw new Error("the worker has no onReceiveMessage handler");
      // Renew the lease while the workflow runs.
      const renew = setInterval(() => {
        void this.#writeClaim(seq, current.etag).then((next) => {
          if (next) current = next;
        });
      }, Math.max(10, Math.floor(this.#leaseMs / 3)));
      this.#renewals.add(renew);
      let result: unknown;
      try {
        result = await handler({
          type: "PendingWorkflowMessage",
          workflow: entry.body.pending,
          sequenceId,
        });
      } finally {
        clearInterval(renew);
        this.#renewals.delete(renew);
      }
      if (isErr(result)) {
        throw (result as { error?: unknown }).error ?? new Error("the workflow failed");
      }
      this.#attempts.delete(seq);
      report("done");
    } catch (error) {
      report("failed", error);
      this.#retryLater(seq, workflow);
    } finally {
      await this.#release(seq, current.etag);
    }
  }

  #retryLater(seq: number, workflow: WorkflowId): void {
    const attempt = (this.#attempts.get(seq) ?? 0) + 1;
    this.#attempts.set(seq, attempt);
    const delay = (this.#options.retryMs ?? 1_000) * Math.min(16, 2 ** (attempt - 1));
    this.#later(delay, () => {
      this.#queue.set(seq, workflow);
      void this.#drain();
    });
  }

  // --- claims: a lease object per job, written conditionally ---

  #sheetPath(): string {
    return "/v1/sheets/" + encodeURIComponent(this.#options.sheetId);
  }

  #claimPath(seq: number): string {
    const key = `${this.#claimPrefix}${this.#options.sheetId}/${seq}`;
    return "/v1/blobs/" + key.split("/").map(encodeURIComponent).join("/");
  }

  // Ours (with its etag), "held" by a live lease of another host (a look is scheduled
  // for when it expires), or null when the store could not be reached.
  async #claim(seq: number): Promise<Claim | "held" | null> {
    const fresh = await this.#writeClaim(seq, undefined);
    if (fresh) return fresh;
    const current = await this.#readClaim(seq);
    if (current === null) return null;
    if (current === "absent") return this.#writeClaim(seq, undefined);  // released meanwhile
    if (current.expires > Date.now() && current.holder !== this.#hostId) {
      const workflow = await this.#pendingOf(seq);
      if (workflow) {
        this.#later(current.expires - Date.now() + 1, () => {
          this.#queue.set(seq, workflow);
          void this.#drain();
        });
      }
      return "held";
    }
    return (await this.#writeClaim(seq, current.etag)) ?? "held";  // take over (or lost)
  }

  // Writes our lease: if absent (etag undefined) or if the object still has `etag`.
  async #writeClaim(seq: number, etag: string | undefined): Promise<Claim | null> {
    const expires = Date.now() + this.#leaseMs;
    const body = JSON.stringify({ holder: this.#hostId, expires });
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.#options.token) headers.authorization = "Bearer " + this.#options.token;
    if (etag === undefined) headers["if-none-match"] = "*";
    else headers["if-match"] = `"${etag}"`;
    try {
      const response = await this.#fetch(this.#options.url.replace(/\/+$/, "") + this.#claimPath(seq), {
        method: "PUT",
        headers,
        body,
      });
      const reply = (await response.json().catch(() => null)) as { etag?: string } | null;
      if (response.status !== 200 || typeof reply?.etag !== "string") return null;
      return { etag: reply.etag, holder: this.#hostId, expires };
    } catch {
      return null;
    }
  }

  async #readClaim(seq: number): Promise<Claim | "absent" | null> {
    try {
      const reply = await this.#http.bytes("GET", this.#claimPath(seq));
      if (reply.status === 404) return "absent";
      if (reply.status !== 200) return null;
      const lease = JSON.parse(new TextDecoder().decode(reply.bytes)) as {
        holder?: string;
        expires?: number;
      };
      const head = await this.#fetch(this.#options.url.replace(/\/+$/, "") + this.#claimPath(seq), {
        method: "HEAD",
        headers: this.#options.token ? { authorization: "Bearer " + this.#options.token } : {},
      });
      const etag = (head.headers.get("etag") ?? "").replace(/"/g, "");
      if (head.status !== 200 || etag === "") return null;
      return { etag, holder: lease.holder ?? "", expires: lease.expires ?? 0 };
    } catch {
      return null;
    }
  }

  async #release(seq: number, etag: string): Promise<void> {
    // Only our own lease: a claim another host took over is theirs to delete.
    const current = await this.#readClaim(seq);
    if (current === null || current === "absent" || current.etag !== etag) return;
    await this.#http.json("DELETE", this.#claimPath(seq)).catch(() => undefined);
  }

  async #pendingOf(seq: number): Promise<WorkflowId | null> {
    const entry = await this.#http.json("GET", `${this.#sheetPath()}/entries/${seq}`).catch(() => null);
    const pending = entry?.status === 200 ? entry.body?.pending : null;
    return typeof pending === "string" && pending !== "" ? pending : null;
  }

  // --- timers ---

  #later(ms: number, run: () => void): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#stopped) run();
    }, ms);
    this.#timers.add(timer);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.#later(ms, resolve));
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
  }
}

// A Result (neverthrow's, infinisheet's or ours) that holds an error.
function isErr(result: unknown): boolean {
  return (
    typeof result === "object" &&
    result !== null &&
    typeof (result as { isErr?: unknown }).isErr === "function" &&
    (result as { isErr: () => boolean }).isErr()
  );
}
