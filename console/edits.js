// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The grid's edits on their way to the server: every edit is shown at once, marked
// pending, and appended in the order it was made, one at a time, with expect_seq = the
// seq after the cells the user saw, moved past this page's own appends that followed
// them (chainedExpect): edits typed in quick succession each carry the head their
// predecessor left, so none of them meets a 409 of its own making. What happens next:
//   201        saved (the mark goes once the grid reads the cells back);
//   409        the entries appended since are read: if none of them touched the edit's
//              cells (another cell, a snapshot, this page's own edits), the edit is sent
//              again behind them by itself; if one did, the edit waits as a conflict
//              showing both values, until the user keeps theirs or applies the edit over it;
//   no answer  (network down, 5xx, 503, 507) the edit is marked failed and retried,
//              with backoff, until the server answers: edits behind it wait, in order;
//   4xx        (the edit itself is refused) marked failed with the server's message.
// Unsaved edits are kept in localStorage per sheet, so a reload (or a crash of the tab)
// does not lose what was typed; they are sent again when the sheet is opened again.
// The undo history (undo.js) follows an edit by its id: outcome(id) says whether it was
// saved (and at which seq) or dropped, cancel(id) takes back one not sent yet.
import {cellRef} from './a1.js';
import {ApiError, get, post, query, sheetPath} from './api.js';
import {touches} from './entries.js';

const RETRY_MS = [1000, 2000, 4000, 8000, 15000];
const STORAGE_PREFIX = 'sheetlog.unsaved.';

/**
 * @typedef {{row: number, column: number, value: any}} EditCell
 * @typedef {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}} Rect
 * @typedef {{id: number, entry: {type: string, body: any}, cells: EditCell[], rect: Rect,
 *            baseSeq: number|null, state: 'pending'|'failed'|'conflict'|'rejected',
 *            error?: string, theirs?: {seq: number, description: string, values: any[]},
 *            attempts: number}} Edit
 */

/**
 * The rectangle around some cells.
 * @param {{row: number, column: number}[]} cells
 * @returns {Rect}
 */
export function rectOf(cells) {
  return {
    firstRow: Math.min(...cells.map((c) => c.row)),
    lastRow: Math.max(...cells.map((c) => c.row)),
    firstColumn: Math.min(...cells.map((c) => c.column)),
    lastColumn: Math.max(...cells.map((c) => c.column)),
  };
}

/**
 * The expect_seq of an edit whose cells were read up to `next` - 1: `next`, moved past
 * the seqs this page appended itself (`own`) that follow it without a gap. Those entries
 * are the user's own earlier edits, which a later edit builds on; anyone else's entry
 * in between still makes the append fail with 409 (and the edit is judged against it).
 * @param {number} next
 * @param {ReadonlySet<number>} own
 */
export function chainedExpect(next, own) {
  let expect = next;
  while (own.has(expect)) expect++;
  return expect;
}

/**
 * Whether an error means "no answer": the edit may succeed later as it is.
 * @param {unknown} error
 */
export function isTransient(error) {
  if (!(error instanceof ApiError)) return true;  // fetch failed: the network
  return error.status >= 500 || error.status === 429 || error.status === 408;
}

export class EditQueue {
  /**
   * @param {{sheetId: string,
   *          grid: {setOverlay: Function, clearOverlay: Function, invalidate: Function},
   *          knownHead: () => number,
   *          onSaved: (seq: number, nextSeq: number) => void,
   *          onChange: (edits: Edit[]) => void,
   *          describe: (entry: any) => string}} options
   */
  constructor({sheetId, grid, knownHead, onSaved, onChange, describe}) {
    this.sheetId = sheetId;
    this.grid = grid;
    this.knownHead = knownHead;
    this.onSaved = onSaved;
    this.onChange = onChange;
    this.describe = describe;
    /** @type {Edit[]} in the order made; the first not in conflict is sent next */
    this.edits = [];
    this.nextId = 1;
    this.running = false;
    /** @type {Edit|null} the edit being sent (its POST or its 409's reads under way) */
    this.inFlight = null;
    /** @type {Set<number>} the seqs this page appended (chainedExpect, judge) */
    this.ownSeqs = new Set();
    /** @type {Map<number, number|null>} edit id -> its seq once saved, null once dropped */
    this.outcomes = new Map();
    /** @type {(() => void)[]} nextChange() waiting */
    this.waiting = [];
    /** @type {ReturnType<typeof setTimeout>|null} */
    this.timer = null;
    this.closed = false;
    this.onOnline = () => this.retryNow();
    window.addEventListener('online', this.onOnline);
    this.restore();
  }

  close() {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    window.removeEventListener('online', this.onOnline);
    this.wake();
  }

  /**
   * Queues an edit: `entry` to append, `cells` the values it shows meanwhile. Returns the
   * edit's id (outcome, cancel).
   * @param {{type: string, body: any}} entry
   * @param {EditCell[]} cells
   * @param {number|null} baseSeq
   * @returns {number}
   */
  add(entry, cells, baseSeq) {
    /** @type {Edit} */
    const edit = {id: this.nextId++, entry, cells, rect: rectOf(cells), baseSeq,
                  state: 'pending', attempts: 0};
    this.edits.push(edit);
    this.mark(edit);
    this.changed();
    this.run();
    return edit.id;
  }

  /**
   * What became of edit `id`: its seq once saved, null once dropped (kept theirs,
   * discarded, cancelled), undefined while it is queued.
   * @param {number} id
   * @returns {number|null|undefined}
   */
  outcome(id) {
    if (this.outcomes.has(id)) return this.outcomes.get(id);
    return this.edits.some((e) => e.id === id) ? undefined : null;
  }

  /**
   * Takes back edit `id` if it is still queued and not being sent: its cells show the
   * server's values again. False when it is on its way (or gone).
   * @param {number} id
   */
  cancel(id) {
    const edit = this.edits.find((e) => e.id === id);
    if (!edit || edit === this.inFlight) return false;
    this.drop(edit);
    this.grid.invalidate();
    this.changed();
    return true;
  }

  /**
   * The state of edit `id` while it is queued ('pending', 'failed', 'conflict',
   * 'rejected'), else undefined.
   * @param {number} id
   */
  state(id) {
    return this.edits.find((e) => e.id === id)?.state;
  }

  /** Resolves on the next change of any edit (sent, saved, failed, dropped). */
  nextChange() {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(() => resolve(undefined)));
  }

  /**
   * Notes an entry this page appended outside the queue (rows and columns).
   * @param {number} seq
   */
  noteOwn(seq) {
    this.ownSeqs.add(seq);
  }

  // Wakes nextChange() once the queue has finished its step (the edit that changed is no
  // longer in flight then).
  wake() {
    if (this.waiting.length === 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    setTimeout(() => { for (const resolve of waiting) resolve(); }, 0);
  }

  /** Sends the failed edits again now (a "Retry" button, the network coming back). */
  retryNow() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const edit of this.edits) {
      if (edit.state === 'failed' || edit.state === 'rejected') {
        edit.state = 'pending';
        edit.attempts = 0;
        this.mark(edit);
      }
    }
    this.changed();
    this.run();
  }

  /**
   * A conflict resolved by the user: `mine` applies the edit over theirs (judged again
   * against anything newer), otherwise it is dropped.
   * @param {number} id
   * @param {boolean} mine
   */
  resolve(id, mine) {
    const edit = this.edits.find((e) => e.id === id);
    if (!edit) return;
    if (mine) {
      edit.state = 'pending';
      delete edit.theirs;
      this.mark(edit);
    } else {
      this.drop(edit);
      this.grid.invalidate();
    }
    this.changed();
    this.run();
  }

  /** Drops a refused edit (its cells show the server's values again). */
  discard(id) {
    const edit = this.edits.find((e) => e.id === id);
    if (!edit) return;
    this.drop(edit);
    this.grid.invalidate();
    this.changed();
  }

  /** @param {Edit} edit */
  drop(edit) {
    this.edits = this.edits.filter((e) => e !== edit);
    this.outcomes.set(edit.id, null);
    for (const cell of edit.cells) {
      // Another queued edit of the same cell keeps its mark.
      const later = this.edits.find((e) => e.cells.some((c) => c.row === cell.row && c.column === cell.column));
      if (later) this.mark(later);
      else this.grid.clearOverlay(cell.row, cell.column);
    }
  }

  /** @param {Edit} edit */
  mark(edit) {
    const title = edit.state === 'failed' || edit.state === 'rejected'
      ? `Not saved: ${edit.error || 'no answer from the server'}`
      : edit.state === 'conflict' ? 'Changed by another client while you edited it'
        : 'Saving…';
    const state = edit.state === 'rejected' ? 'failed' : edit.state;
    for (const cell of edit.cells) this.grid.setOverlay(cell.row, cell.column, cell.value, state, title);
  }

  changed() {
    this.save();
    this.onChange(this.edits);
    this.wake();
  }

  async run() {
    if (this.running || this.closed) return;
    this.running = true;
    try {
      for (;;) {
        const edit = this.edits.find((e) => e.state === 'pending');
        if (!edit || this.closed) return;
        // Edits wait behind a failed one: they are sent in the order made.
        const blocked = this.edits.find((e) => e.state === 'failed');
        if (blocked && this.edits.indexOf(blocked) < this.edits.indexOf(edit)) return;
        this.inFlight = edit;
        try {
          await this.send(edit);
        } finally {
          this.inFlight = null;
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** @param {Edit} edit */
  async send(edit) {
    for (;;) {
      const expect = chainedExpect(edit.baseSeq !== null ? edit.baseSeq + 1 : this.knownHead(),
                                   this.ownSeqs);
      let result;
      try {
        result = await post(sheetPath(this.sheetId, '/entries'), {...edit.entry, expect_seq: expect});
      } catch (error) {
        if (error instanceof ApiError && error.status === 409 &&
            typeof error.details.next_seq === 'number') {
          const verdict = await this.judge(edit, expect, error.details.next_seq);
          if (verdict === 'retry') {
            edit.baseSeq = error.details.next_seq - 1;
            continue;
          }
          if (verdict === 'conflict') {
            edit.state = 'conflict';
            this.mark(edit);
            this.changed();
            return;
          }
          // Could not read the entries between: try again later.
          this.fail(edit, new Error('could not read the entries appended meanwhile'));
          return;
        }
        if (isTransient(error)) {
          this.fail(edit, /** @type {Error} */ (error));
        } else {
          edit.state = 'rejected';
          edit.error = /** @type {Error} */ (error).message;
          this.mark(edit);
          this.changed();
        }
        return;
      }
      this.edits = this.edits.filter((e) => e !== edit);
      this.ownSeqs.add(result.seq);
      this.outcomes.set(edit.id, result.seq);
      for (const cell of edit.cells) {
        const later = this.edits.find((e) => e.cells.some((c) => c.row === cell.row && c.column === cell.column));
        if (later) continue;
        // Shown until the grid reads the cell back at this seq or later.
        this.grid.setOverlay(cell.row, cell.column, cell.value, 'saved', '', result.seq);
      }
      this.onSaved(result.seq, result.next_seq || result.seq + 1);
      this.changed();
      return;
    }
  }

  /**
   * @param {Edit} edit
   * @param {Error} error
   */
  fail(edit, error) {
    edit.state = 'failed';
    edit.error = error.message;
    edit.attempts++;
    this.mark(edit);
    this.changed();
    if (this.timer) clearTimeout(this.timer);
    const delay = RETRY_MS[Math.min(edit.attempts - 1, RETRY_MS.length - 1)];
    this.timer = setTimeout(() => this.retryNow(), delay);
  }

  /**
   * Reads the entries in [from, to) and says whether `edit` can go behind them by
   * itself ('retry'), meets one that changed its cells ('conflict', with theirs), or
   * could not tell ('unknown'). This page's own entries are not theirs: a later edit of
   * the user builds on an earlier one.
   * @param {Edit} edit
   * @param {number} from
   * @param {number} to
   * @returns {Promise<'retry'|'conflict'|'unknown'>}
   */
  async judge(edit, from, to) {
    try {
      let touching = null;
      for (let next = from; next < to;) {
        const page = await get(sheetPath(this.sheetId, '/entries') +
                               query({from: next, to, limit: 1000, body: 'inline'}));
        for (const entry of page.entries) {
          if (!this.ownSeqs.has(entry.seq) && touches(entry, edit.rect)) touching = entry;
        }
        if (page.complete || page.entries.length === 0) break;
        next = page.entries[page.entries.length - 1].seq + 1;
      }
      if (!touching) return 'retry';
      // Theirs: the cells as they are now (after everything up to `to`).
      const range = `${cellRef(edit.rect.firstRow, edit.rect.firstColumn)}:` +
                    `${cellRef(edit.rect.lastRow, edit.rect.lastColumn)}`;
      const now = await get(sheetPath(this.sheetId, '/cells') + query({range, at: to - 1}));
      edit.theirs = {
        seq: touching.seq,
        description: this.describe(touching),
        values: edit.cells.map((c) => now.rows[c.row - edit.rect.firstRow]?.[c.column - edit.rect.firstColumn] ?? null),
      };
      edit.baseSeq = to - 1;  // once the user has seen theirs, the edit goes over it
      return 'conflict';
    } catch {
      return 'unknown';
    }
  }

  save() {
    try {
      const key = STORAGE_PREFIX + this.sheetId;
      if (this.edits.length === 0) localStorage.removeItem(key);
      else localStorage.setItem(key, JSON.stringify(this.edits));
    } catch {
      // storage full or disabled: the edits live as long as the page
    }
  }

  restore() {
    let saved = [];
    try {
      saved = JSON.parse(localStorage.getItem(STORAGE_PREFIX + this.sheetId) || '[]');
    } catch {
      saved = [];
    }
    for (const edit of saved) {
      edit.id = this.nextId++;
      if (edit.state !== 'conflict') edit.state = 'pending';
      edit.attempts = 0;
      this.edits.push(edit);
      this.mark(edit);
    }
    if (this.edits.length) {
      this.onChange(this.edits);
      queueMicrotask(() => this.run());
    }
  }
}
