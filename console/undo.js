// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Undo and redo of the user's own cell edits in this page session (Ctrl+Z, Ctrl+Y,
// Ctrl+Shift+Z, the toolbar's buttons). Nothing is ever taken back on the server: an
// undo appends the cells' previous values as a new entry, a redo appends the edit again.
//
// Each step is one entry the page appended (a typed value, a paste, a Delete of a
// selection): a multi-cell paste undoes as one step. Undoing a step:
//   not sent yet      the edit is taken back from the queue (cancel); nothing is appended;
//   saved at seq S    the cells as of S - 1 are its previous values; the cells at the head
//                     are read first: if one no longer holds what the step wrote, someone
//                     else changed it since, which is said and not overwritten (the step
//                     is dropped); otherwise the previous values go through the edit queue
//                     with that read's seq as their base, so an append in between meets
//                     expect_seq and the queue's per-cell conflict handling like any edit.
// Redo is the same the other way. Steps run one at a time, in the order asked, and each
// reads the head only once what the ones before it appended is saved: Ctrl+Z pressed
// three times quickly undoes three steps, none of them judged against the page's own
// undo still on its way.
// Structural changes (rows, columns) are not undone; they clear the history, whose cell
// addresses they move.
import {cellRef} from './a1.js';
import {rectOf} from './edits.js';

const MAX_STEPS = 100;

/**
 * @typedef {{row: number, column: number, value: any}} StepCell
 * @typedef {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}} Rect
 * @typedef {{entry: {type: string, body: any}, cells: StepCell[], rect: Rect,
 *            baseSeq: number|null, editId: number|null, seq: number|null}} Action
 *   an entry the page appended (or queued), the values it writes, and what became of it
 * @typedef {{label: string, forward: Action, inverse: Action|null}} Step
 *   on the undo stack: `forward` applied, `inverse` null; on the redo stack: `inverse`
 *   applied, or null when `forward` was taken back before it was sent
 * @typedef {{add: (entry: {type: string, body: any}, cells: StepCell[], baseSeq: number|null) => number,
 *            outcome: (id: number) => number|null|undefined,
 *            cancel: (id: number) => boolean,
 *            state?: (id: number) => string|undefined,
 *            nextChange: () => Promise<void>}} Queue
 * @typedef {{rows: any[][], formats?: string[][], at_seq: number}} CellsRead
 * @typedef {{queue: Queue,
 *            read: (rect: Rect, at?: number) => Promise<CellsRead>,
 *            notify: (message: string, kind: string) => void,
 *            describe: (entry: {type: string, body: any}) => string,
 *            onChange: () => void}} UndoDeps
 */

/**
 * Whether two cell values are the same (JSON values: by content).
 * @param {any} a
 * @param {any} b
 */
export function sameCellValue(a, b) {
  if (a === b) return true;
  if (a === undefined) a = null;
  if (b === undefined) b = null;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The entry that writes `cells` (values, with their formats): one SetCell for one cell,
 * else one SetCells of the cells by reference.
 * @param {{row: number, column: number, value: any, format?: string}[]} cells
 * @returns {{type: string, body: any}}
 */
export function entryForCells(cells) {
  if (cells.length === 1) {
    const [c] = cells;
    return {type: 'SetCell', body: {ref: cellRef(c.row, c.column), value: c.value ?? null,
                                    ...(c.format ? {format: c.format} : {})}};
  }
  return {
    type: 'SetCells',
    body: {cells: Object.fromEntries(cells.map((c) => [
      cellRef(c.row, c.column), c.format ? {value: c.value ?? null, format: c.format} : c.value ?? null,
    ]))},
  };
}

/**
 * The values (and formats) of `cells` in a read of `rect`.
 * @param {StepCell[]} cells
 * @param {Rect} rect
 * @param {CellsRead} read
 * @returns {{row: number, column: number, value: any, format: string}[]}
 */
export function valuesIn(cells, rect, read) {
  return cells.map(({row, column}) => {
    const i = row - rect.firstRow;
    const j = column - rect.firstColumn;
    return {row, column, value: read.rows[i]?.[j] ?? null, format: read.formats?.[i]?.[j] || ''};
  });
}

/**
 * The cells of `expected` whose value in `read` is another: what someone else changed.
 * @param {StepCell[]} expected
 * @param {Rect} rect
 * @param {CellsRead} read
 * @returns {{row: number, column: number, value: any}[]}
 */
export function changedCells(expected, rect, read) {
  const now = valuesIn(expected, rect, read);
  return now.filter((cell, k) => !sameCellValue(cell.value, expected[k].value));
}

/**
 * "B1", "B1 and C4", "B1, C4 and 3 more cells".
 * @param {{row: number, column: number}[]} cells
 */
export function cellList(cells) {
  const refs = cells.slice(0, 2).map((c) => cellRef(c.row, c.column));
  if (cells.length <= 2) return refs.join(' and ');
  return `${refs.join(', ')} and ${cells.length - 2} more cells`;
}

export class UndoHistory {
  constructor() {
    /** @type {Step[]} */
    this.undoStack = [];
    /** @type {Step[]} */
    this.redoStack = [];
    /** @type {UndoDeps|null} */
    this.deps = null;
    /** @type {Promise<void>} the steps asked for run one after another */
    this.chain = Promise.resolve();
    /** @type {Set<Action>} what undo and redo queued, until it is saved */
    this.sent = new Set();
  }

  /** @param {UndoDeps} deps */
  attach(deps) {
    this.deps = deps;
    this.changed();
  }

  // The page goes (another tab of the sheet): steps whose edits are still queued cannot
  // be followed by the next queue (their edits are resent under new ids), so they go. A
  // step taken back before it was sent stays redoable: it is queued anew.
  detach() {
    const saved = (/** @type {Action} */ a) => this.resolveSeq(a) !== undefined && a.seq !== null;
    this.undoStack = this.undoStack.filter((s) => saved(s.forward));
    this.redoStack = this.redoStack.filter((s) => s.inverse === null || saved(s.inverse));
    this.sent.clear();
    this.deps = null;
  }

  canUndo() {
    return this.undoStack.length > 0;
  }

  canRedo() {
    return this.redoStack.length > 0;
  }

  /** What Undo would take back ('' when nothing). */
  undoLabel() {
    return this.undoStack.at(-1)?.label ?? '';
  }

  /** What Redo would apply again ('' when nothing). */
  redoLabel() {
    return this.redoStack.at(-1)?.label ?? '';
  }

  /** Forgets every step (rows or columns moved the cells they address). */
  clear() {
    this.undoStack = [];
    this.redoStack = [];
    this.changed();
  }

  /**
   * Records an edit the user made (already queued as `editId`): a new step to undo.
   * @param {{type: string, body: any}} entry
   * @param {StepCell[]} cells
   * @param {number|null} baseSeq
   * @param {number} editId
   */
  record(entry, cells, baseSeq, editId) {
    const forward = {entry, cells, rect: rectOf(cells), baseSeq, editId, seq: null};
    this.undoStack.push({label: this.deps ? this.deps.describe(entry) : entry.type, forward,
                         inverse: null});
    if (this.undoStack.length > MAX_STEPS) this.undoStack.shift();
    this.redoStack = [];
    this.changed();
  }

  /** Undoes the last step (after any asked before it). */
  undo() {
    return this.enqueue(() => this.undoStep(), 'Undo');
  }

  /** Applies the last undone step again (after any asked before it). */
  redo() {
    return this.enqueue(() => this.redoStep(), 'Redo');
  }

  /**
   * @param {() => Promise<void>} work
   * @param {string} what
   */
  enqueue(work, what) {
    const run = this.chain.then(work).catch((error) => {
      this.deps?.notify(`${what} failed: ${error.message}`, 'error');
    }).finally(() => this.changed());
    this.chain = run;
    return run;
  }

  changed() {
    this.deps?.onChange();
  }

  /**
   * Fills in `action.seq` from the queue once its edit is saved.
   * @param {Action|null} action
   * @returns {number|null|undefined} the seq; null: dropped; undefined: still queued
   */
  resolveSeq(action) {
    if (!action) return null;
    if (action.seq !== null) return action.seq;
    if (action.editId === null || !this.deps) return null;
    const outcome = this.deps.queue.outcome(action.editId);
    if (typeof outcome === 'number') action.seq = outcome;
    return outcome;
  }

  /**
   * Waits until `action` is saved (its seq) or dropped (null); takes it back from the
   * queue instead when it is not on its way yet ('cancelled').
   * @param {Action} action
   * @returns {Promise<number|null|'cancelled'>}
   */
  async settle(action) {
    for (;;) {
      const deps = /** @type {UndoDeps} */ (this.deps);
      if (!deps) return null;
      const seq = this.resolveSeq(action);
      if (seq !== undefined) return seq;
      if (action.editId !== null && deps.queue.cancel(action.editId)) return 'cancelled';
      await deps.queue.nextChange();
    }
  }

  /**
   * Queues an entry of undo's or redo's.
   * @param {{type: string, body: any}} entry
   * @param {StepCell[]} cells
   * @param {Rect} rect
   * @param {number|null} baseSeq
   * @returns {Action}
   */
  send(entry, cells, rect, baseSeq) {
    const deps = /** @type {UndoDeps} */ (this.deps);
    const action = {entry, cells, rect, baseSeq, editId: deps.queue.add(entry, cells, baseSeq), seq: null};
    this.sent.add(action);
    return action;
  }

  // Waits until what undo and redo queued before is saved (or waits for the user: a
  // conflict, a refusal), so that the head read next includes it.
  async drain() {
    for (const action of [...this.sent]) {
      for (;;) {
        const deps = this.deps;
        if (!deps) return;
        const seq = this.resolveSeq(action);
        const state = action.editId !== null ? deps.queue.state?.(action.editId) : undefined;
        if (seq !== undefined || state === 'conflict' || state === 'rejected') break;
        await deps.queue.nextChange();
      }
      this.sent.delete(action);
    }
  }

  async undoStep() {
    await this.drain();
    const deps = this.deps;
    if (!deps) return;
    const step = this.undoStack.pop();
    if (!step) {
      deps.notify('Nothing to undo', 'info');
      return;
    }
    this.changed();
    const {forward} = step;
    const seq = await this.settle(forward);
    if (seq === 'cancelled') {
      this.redoStack.push({...step, inverse: null});
      deps.notify(`Undone: ${step.label} (it had not been saved yet)`, 'success');
      return;
    }
    if (seq === null) {
      deps.notify(`Nothing to undo: ${step.label} was not saved`, 'warning');
      return;
    }
    let before;
    let now;
    try {
      [before, now] = await Promise.all([deps.read(forward.rect, seq - 1), deps.read(forward.rect)]);
    } catch (error) {
      this.undoStack.push(step);  // nothing done: it can be undone again
      throw error;
    }
    const changed = changedCells(forward.cells, forward.rect, now);
    if (changed.length) {
      deps.notify(`Not undone: ${cellList(changed)} ${changed.length === 1 ? 'was' : 'were'} ` +
                  'changed by another client since your edit' +
                  (changed.length === 1 ? ` (it holds ${JSON.stringify(changed[0].value)} now)` : '') +
                  '. Their value stays.', 'warning');
      return;
    }
    const previous = valuesIn(forward.cells, forward.rect, before);
    const cells = previous.map(({row, column, value}) => ({row, column, value}));
    const inverse = this.send(entryForCells(previous), cells, forward.rect, now.at_seq);
    this.redoStack.push({...step, inverse});
  }

  async redoStep() {
    await this.drain();
    const deps = this.deps;
    if (!deps) return;
    const step = this.redoStack.pop();
    if (!step) {
      deps.notify('Nothing to redo', 'info');
      return;
    }
    this.changed();
    const {forward, inverse} = step;
    if (!inverse) {
      // Taken back before it was sent: queued again as it was.
      const again = this.send(forward.entry, forward.cells, forward.rect, forward.baseSeq);
      this.undoStack.push({...step, forward: again});
      return;
    }
    const seq = await this.settle(inverse);
    if (seq === 'cancelled' || seq === null) {
      // The undo never reached the server: the edit stands as it was.
      this.undoStack.push({...step, inverse: null});
      if (seq === 'cancelled') deps.notify(`Redone: ${step.label}`, 'success');
      return;
    }
    let now;
    try {
      now = await deps.read(forward.rect);
    } catch (error) {
      this.redoStack.push(step);  // nothing done: it can be redone again
      throw error;
    }
    const changed = changedCells(inverse.cells, forward.rect, now);
    if (changed.length) {
      deps.notify(`Not redone: ${cellList(changed)} ${changed.length === 1 ? 'was' : 'were'} ` +
                  'changed by another client since the undo. Their value stays.', 'warning');
      return;
    }
    const again = this.send(forward.entry, forward.cells, forward.rect, now.at_seq);
    this.undoStack.push({...step, forward: again, inverse: null});
  }
}
