// Live updates of one sheet: every entry committed after a known seq, in seq order,
// exactly once.
//
// Transport: the sheet's Server-Sent Events (GET /v1/sheets/{id}/events?from=<seq>,
// issue 16 section 1), read with fetch rather than EventSource so that the bearer token
// can be sent; a reconnect resumes from the next seq this page has not seen (the same
// as Last-Event-ID + 1), after an `overflow` too. A server without the route (404 with
// no route), or a stream that cannot be opened, falls back to polling
// GET /v1/sheets/{id}/entries?from=<next seq> about once a second. Either way the
// connection is held only while the page is visible.
import {get, query, rawRequest, sheetPath} from './api.js';

const POLL_INTERVAL_MS = 1000;
const RECONNECT_MS = 1000;
const PAGE_LIMIT = 1000;

export class LiveFeed {
  // `onEntries(entries)` gets each batch of new entries in seq order; `onError(error)`
  // a failed poll or stream (it goes on); `onGone(firstSeq)` the log was truncated past
  // the next seq or the sheet deleted (the caller reloads); `onTransport(name)` says
  // whether "stream" or "polling" delivers the entries.
  constructor(sheetId, nextSeq, {onEntries, onError = () => {}, onGone = () => {},
                                 onTransport = () => {}}) {
    this.sheetId = sheetId;
    this.nextSeq = nextSeq;
    this.handlers = {onEntries, onError, onGone, onTransport};
    this.timer = null;
    this.inFlight = null;
    this.closed = false;
    this.streaming = true;  // until the server shows it has no event stream
    this.stream = null;     // AbortController of the open stream
    this.onVisibility = () => {
      if (document.visibilityState === 'visible') this.start();
      else this.stopStream();
    };
    document.addEventListener('visibilitychange', this.onVisibility);
    this.start();
  }

  // Skips ahead after the caller learned of entries itself. Never moves back.
  advanceTo(nextSeq) {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq;
  }

  // Asks for news now (e.g. right after an append): a poll when polling; a stream
  // delivers by itself.
  refresh() {
    if (!this.streaming) this.pollSoon(0);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    this.stopStream();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  start() {
    if (this.closed || document.visibilityState !== 'visible') return;
    if (this.streaming) {
      if (!this.stream) this.runStream();
    } else {
      this.pollSoon(0);
    }
  }

  stopStream() {
    if (this.stream) this.stream.abort();
    this.stream = null;
  }

  // --- Server-Sent Events ---

  async runStream() {
    const abort = new AbortController();
    this.stream = abort;
    let opened = false;
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
          this.fallBackToPolling();
          return;
        }
        if (response.status === 410 || response.status === 404) {
          this.handlers.onGone(body?.error?.first_seq ?? null);
          this.closed = true;
          return;
        }
        throw new Error(message || `event stream: HTTP ${response.status}`);
      }
      opened = true;
      this.handlers.onTransport('stream');
      await this.readEvents(response.body.getReader());
    } catch (error) {
      if (abort.signal.aborted || this.closed) return;
      this.handlers.onError(error);
      if (!opened) {
        // Could not open it: catch up by polling once, then try the stream again.
        await this.pollOnce();
      }
    } finally {
      if (this.stream === abort) this.stream = null;
    }
    if (!this.closed && !abort.signal.aborted && this.streaming) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.start(), RECONNECT_MS);
    }
  }

  // Parses the event stream (text/event-stream: fields up to a blank line) and
  // delivers the entries of each network read as one batch.
  async readEvents(reader) {
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, {stream: true}).replace(/\r\n?/g, '\n');
      const batch = [];
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = {type: 'message', data: []};
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue;  // heartbeat comments
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event.type = text;
          else if (field === 'data') event.data.push(text);
        }
        const data = event.data.length ? JSON.parse(event.data.join('\n')) : null;
        if (event.type === 'entry' && data && data.seq >= this.nextSeq) {
          this.nextSeq = data.seq + 1;
          batch.push(data);
        } else if (event.type === 'gone' || event.type === 'deleted') {
          if (batch.length) this.handlers.onEntries(batch);
          this.closed = true;
          this.handlers.onGone(data?.first_seq ?? null);
          return;
        }
        // overflow: the server closes the stream; the reconnect resumes at nextSeq.
        // metadata, snapshot, truncated: no cells change.
      }
      if (batch.length) this.handlers.onEntries(batch);
    }
  }

  fallBackToPolling() {
    this.streaming = false;
    this.handlers.onTransport('polling');
    this.pollSoon(0);
  }

  // --- polling ---

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
      if (!this.streaming) this.pollSoon(POLL_INTERVAL_MS);
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
        const fresh = page.entries.filter((e) => e.seq >= this.nextSeq);
        if (fresh.length > 0) {
          this.nextSeq = fresh[fresh.length - 1].seq + 1;
          this.handlers.onEntries(fresh);
        }
        if (page.complete || page.entries.length === 0) return;
      }
    } catch (error) {
      if (this.closed) return;
      if (error.status === 410) {
        this.handlers.onGone(error.details.first_seq);
      } else if (error.status === 400 && error.code === 'RangeError') {
        // Our next seq is beyond the head: the sheet was replaced (reset, restore).
        this.handlers.onGone(null);
      } else {
        this.handlers.onError(error);
      }
    }
  }
}
