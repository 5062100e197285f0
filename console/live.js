// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Live updates of one sheet: every entry committed after a known seq, in seq order,
// exactly once.
//
// Transport: the sheet's Server-Sent Events (GET /v1/sheets/{id}/events?from=<seq>),
// read with fetch rather than EventSource so that the bearer token can be sent; a
// reconnect resumes from the next seq this page has not seen (the same as
// Last-Event-ID + 1), after an `overflow` too. Polling GET /v1/sheets/{id}/entries?from=
// about once a second takes over when the stream cannot be had: a server without the
// route (404 with no route), a stream that fails to open twice in a row (a proxy that
// blocks it), or one that opens but stays silent (a proxy that buffers it: the server
// sends the sheet's state as soon as a stream opens). While polling, the stream is tried
// again every 30 s, and takes over once it delivers. Either way the connection is held
// only while the page is visible.
import {get, query, rawRequest, sheetPath} from './api.js';
import {EventStreamParser} from './sse.js';

const POLL_INTERVAL_MS = 1000;
const RECONNECT_MS = 1000;
const STREAM_RETRY_MS = 30000;
const SILENT_STREAM_MS = 5000;
const FAILED_OPENS_BEFORE_POLLING = 2;
const PAGE_LIMIT = 1000;

/**
 * @typedef {{onEntries: (entries: any[]) => void, onError?: (error: Error) => void,
 *            onGone?: (reason: 'deleted'|'truncated', firstSeq: number|null) => void,
 *            onTransport?: (transport: 'stream'|'polling') => void}} FeedHandlers
 */

export class LiveFeed {
  /**
   * `onEntries(entries)` gets each batch of new entries in seq order; `onError(error)`
   * a failed poll or stream (it goes on); `onGone(reason, firstSeq)` the sheet was
   * deleted or its log truncated past the next seq (the feed stops); `onTransport(name)`
   * says whether "stream" or "polling" delivers the entries.
   * @param {string} sheetId
   * @param {number} nextSeq
   * @param {FeedHandlers} handlers
   */
  constructor(sheetId, nextSeq, {onEntries, onError = () => {}, onGone = () => {},
                                 onTransport = () => {}}) {
    this.sheetId = sheetId;
    this.nextSeq = nextSeq;
    this.handlers = {onEntries, onError, onGone, onTransport};
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    this.timer = undefined;
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    this.streamTimer = undefined;
    /** @type {Promise<void>|null} */
    this.inFlight = null;
    this.closed = false;
    this.hasStreamRoute = true;  // until the server shows it has no event stream
    this.polling = false;        // polling delivers (the stream is blocked or silent)
    this.failedOpens = 0;
    this.announced = false;
    /** @type {AbortController|null} */
    this.stream = null;
    this.onVisibility = () => {
      if (document.visibilityState === 'visible') this.start();
      else this.stopStream();
    };
    document.addEventListener('visibilitychange', this.onVisibility);
    this.start();
  }

  /** Skips ahead after the caller learned of entries itself. Never moves back. */
  advanceTo(/** @type {number} */ nextSeq) {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq;
  }

  /** Asks for news now (e.g. right after an append): a poll when polling. */
  refresh() {
    if (this.polling) this.pollSoon(0);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.streamTimer);
    this.stopStream();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  start() {
    if (this.closed || document.visibilityState !== 'visible') return;
    if (this.hasStreamRoute && !this.stream) this.runStream();
    if (this.polling) this.pollSoon(0);
  }

  stopStream() {
    if (this.stream) this.stream.abort();
    this.stream = null;
  }

  /** @param {'stream'|'polling'} transport */
  use(transport) {
    const polling = transport === 'polling';
    if (polling === this.polling && this.announced) return;
    this.announced = true;
    this.polling = polling;
    this.handlers.onTransport(transport);
    if (polling) this.pollSoon(0);
    else clearTimeout(this.timer);
  }

  // --- Server-Sent Events ---

  async runStream() {
    const abort = new AbortController();
    this.stream = abort;
    let opened = false;
    /** @type {ReturnType<typeof setTimeout>|undefined} */
    let silence;
    try {
      const response = await rawRequest(
        'GET', sheetPath(this.sheetId, '/events') + query({from: this.nextSeq}),
        {signal: abort.signal, headers: {Accept: 'text/event-stream'}});
      const type = response.headers.get('Content-Type') || '';
      if (!response.ok || !type.startsWith('text/event-stream')) {
        let body = null;
        try {
          body = await response.json();
        } catch { /* not JSON */ }
        const message = body?.error?.message || '';
        if (response.status === 404 && /no route/.test(message)) {
          this.hasStreamRoute = false;
          this.use('polling');
          return;
        }
        if (response.status === 410) {
          this.gone('truncated', body?.error?.first_seq ?? null);
          return;
        }
        if (response.status === 404) {
          this.gone('deleted', null);
          return;
        }
        throw new Error(message || `event stream: HTTP ${response.status}`);
      }
      opened = true;
      this.failedOpens = 0;
      // A stream that says nothing (a buffering proxy) is no stream: poll meanwhile.
      silence = setTimeout(() => this.use('polling'), SILENT_STREAM_MS);
      if (!response.body) throw new Error('event stream without a body');
      await this.readEvents(response.body.getReader(), () => {
        clearTimeout(silence);
        this.use('stream');
      });
    } catch (error) {
      if (abort.signal.aborted || this.closed) return;
      this.handlers.onError(/** @type {Error} */ (error));
      if (!opened) {
        this.failedOpens++;
        if (this.failedOpens >= FAILED_OPENS_BEFORE_POLLING) this.use('polling');
        else await this.pollOnce();  // catch up, then try the stream again
      }
    } finally {
      clearTimeout(silence);
      if (this.stream === abort) this.stream = null;
    }
    if (!this.closed && !abort.signal.aborted && this.hasStreamRoute) {
      clearTimeout(this.streamTimer);
      this.streamTimer = setTimeout(() => {
        if (!this.stream) this.start();
      }, this.polling ? STREAM_RETRY_MS : RECONNECT_MS);
    }
  }

  /**
   * Reads the event stream and delivers the entries of each network read as one
   * batch. `onData` is called for every read that carried an event (or a heartbeat).
   * @param {ReadableStreamDefaultReader<Uint8Array>} reader
   * @param {() => void} onData
   */
  async readEvents(reader, onData) {
    const decoder = new TextDecoder();
    const parser = new EventStreamParser();
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      const text = decoder.decode(value, {stream: true});
      if (text) onData();
      const batch = [];
      for (const event of parser.feed(text)) {
        const data = event.data ? JSON.parse(event.data) : null;
        if (event.type === 'entry' && data && data.seq >= this.nextSeq) {
          this.nextSeq = data.seq + 1;
          batch.push(data);
        } else if (event.type === 'gone' || event.type === 'deleted') {
          if (batch.length) this.handlers.onEntries(batch);
          this.gone(event.type === 'deleted' ? 'deleted' : 'truncated', data?.first_seq ?? null);
          return;
        }
        // overflow: the server closes the stream; the reconnect resumes at nextSeq.
        // metadata, snapshot, truncated: no cells change.
      }
      if (batch.length) this.handlers.onEntries(batch);
    }
  }

  /**
   * @param {'deleted'|'truncated'} reason
   * @param {number|null} firstSeq
   */
  gone(reason, firstSeq) {
    if (this.closed) return;
    this.close();
    this.handlers.onGone(reason, firstSeq);
  }

  // --- polling ---

  /** @param {number} delay */
  pollSoon(delay) {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.poll(), delay);
  }

  async poll() {
    if (this.closed) return;
    if (document.visibilityState !== 'visible') return;  // resumed by visibilitychange
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.pollOnce().finally(() => {
      this.inFlight = null;
      if (this.polling) this.pollSoon(POLL_INTERVAL_MS);
    });
    return this.inFlight;
  }

  async pollOnce() {
    try {
      for (;;) {
        const from = this.nextSeq;
        const page = await get(sheetPath(this.sheetId, '/entries') +
                               query({from, limit: PAGE_LIMIT}));
        if (this.closed) return;
        const fresh = page.entries.filter((/** @type {any} */ e) => e.seq >= this.nextSeq);
        if (fresh.length > 0) {
          this.nextSeq = fresh[fresh.length - 1].seq + 1;
          this.handlers.onEntries(fresh);
        }
        if (page.complete || page.entries.length === 0) return;
      }
    } catch (error) {
      if (this.closed) return;
      const e = /** @type {any} */ (error);
      if (e.status === 410) {
        this.gone('truncated', e.details.first_seq);
      } else if (e.status === 404) {
        this.gone('deleted', null);
      } else if (e.status === 400 && e.code === 'RangeError') {
        // Our next seq is beyond the head: the sheet was replaced (reset, restore).
        this.gone('truncated', null);
      } else {
        this.handlers.onError(e);
      }
    }
  }
}
