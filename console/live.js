// Live updates of one sheet: every entry committed after a known seq, in seq order.
//
// Today this polls GET /v1/sheets/{id}/entries?from=<next seq> about once a second,
// and only while the page is visible (a hidden tab costs the server nothing); a
// visibility change polls at once. The interface is the one an EventSource on
// GET /v1/sheets/{id}/events?from=<seq> would have (issue 16 section 1), so the pages
// do not change when the server streams: subscribe with a seq, receive entries in
// order exactly once, close.
import {get, sheetPath, query} from './api.js';

const POLL_INTERVAL_MS = 1000;
const PAGE_LIMIT = 1000;

export class LiveFeed {
  // `onEntries(entries)` gets each batch of new entries in seq order; `onError(error)`
  // a failed poll (polling goes on); `onGone(firstSeq)` the log was truncated past
  // the next seq (the caller reloads).
  constructor(sheetId, nextSeq, {onEntries, onError = () => {}, onGone = () => {}}) {
    this.sheetId = sheetId;
    this.nextSeq = nextSeq;
    this.handlers = {onEntries, onError, onGone};
    this.timer = null;
    this.inFlight = null;
    this.closed = false;
    this.onVisibility = () => {
      if (document.visibilityState === 'visible') this.pollSoon(0);
    };
    document.addEventListener('visibilitychange', this.onVisibility);
    this.pollSoon(0);
  }

  // Skips ahead after the caller learned of entries itself (e.g. its own append), so
  // they are not delivered twice. Never moves back.
  advanceTo(nextSeq) {
    if (nextSeq > this.nextSeq) this.nextSeq = nextSeq;
  }

  // Polls now (e.g. right after an append) instead of waiting for the next tick.
  refresh() {
    this.pollSoon(0);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

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
      this.pollSoon(POLL_INTERVAL_MS);
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
