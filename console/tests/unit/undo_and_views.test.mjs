// Unit tests of the helpers behind issue 35's fixes: the undo history (against a fake
// sheet and edit queue), expect_seq chaining, the undo keys, the view of the past, the
// fault points a server names, stored times, and the navigation's scroll hints.
import assert from 'node:assert/strict';
import {describe, test} from 'node:test';

import {cellRef, parseRef} from '../../a1.js';
import {chainedExpect} from '../../edits.js';
import {formatStoredTime, isTimeAttribute, storedTime} from '../../format.js';
import {historyKey} from '../../grid.js';
import {knownFaultPoints} from '../../pages/controls.js';
import {viewSeq} from '../../pages/grid_tab.js';
import {atParam} from '../../pages/sheet.js';
import {navOverflow} from '../../ui.js';
import {cellList, changedCells, entryForCells, sameCellValue, UndoHistory} from '../../undo.js';

// A sheet's log as the server keeps it: every seq's cells (values and formats).
class FakeSheet {
  constructor() {
    /** @type {Map<string, {value: any, format: string}>[]} the cells after each seq */
    this.states = [new Map()];
  }

  get head() {
    return this.states.length - 1;
  }

  /** Appends an entry (SetCell, SetCells by cells or rows); returns its seq. */
  append(entry) {
    const cells = new Map(this.states.at(-1));
    const set = (ref, spec) => {
      const old = cells.get(ref);
      if (spec !== null && typeof spec === 'object') cells.set(ref, {value: spec.value, format: spec.format ?? ''});
      else cells.set(ref, {value: spec, format: old?.format ?? ''});
    };
    const b = entry.body;
    if (entry.type === 'SetCell') {
      set(b.ref, b.format ? {value: b.value, format: b.format} : b.value);
    } else if (b.cells) {
      for (const [ref, spec] of Object.entries(b.cells)) set(ref, spec);
    } else {
      const at = parseRef(b.at);
      b.rows.forEach((row, i) => row.forEach((v, j) => set(cellRef(at.row + i, at.column + j), v)));
    }
    this.states.push(cells);
    return this.head;
  }

  value(ref) {
    return this.states.at(-1).get(ref)?.value ?? null;
  }

  read(rect, at) {
    const state = this.states[at ?? this.head];
    const rows = [];
    const formats = [];
    for (let r = rect.firstRow; r <= rect.lastRow; r++) {
      const line = [];
      const lineFormats = [];
      for (let c = rect.firstColumn; c <= rect.lastColumn; c++) {
        const cell = state.get(cellRef(r, c));
        line.push(cell?.value ?? null);
        lineFormats.push(cell?.format ?? '');
      }
      rows.push(line);
      formats.push(lineFormats);
    }
    return Promise.resolve({rows, formats, at_seq: at ?? this.head});
  }
}

// The edit queue as the undo history sees it: edits wait until flush() sends them (the
// first `inFlight` of them count as on their way: they cannot be cancelled).
class FakeQueue {
  constructor(sheet) {
    this.sheet = sheet;
    this.nextId = 1;
    this.queued = [];
    this.outcomes = new Map();
    this.inFlight = 0;
    this.waiting = [];
    this.added = [];
  }

  add(entry, cells, baseSeq) {
    const id = this.nextId++;
    this.queued.push({id, entry, cells, baseSeq});
    this.added.push({entry, baseSeq});
    return id;
  }

  outcome(id) {
    if (this.outcomes.has(id)) return this.outcomes.get(id);
    return this.queued.some((e) => e.id === id) ? undefined : null;
  }

  cancel(id) {
    const index = this.queued.findIndex((e) => e.id === id);
    if (index < 0 || index < this.inFlight) return false;
    this.queued.splice(index, 1);
    this.outcomes.set(id, null);
    return true;
  }

  state(id) {
    return this.queued.some((e) => e.id === id) ? 'pending' : undefined;
  }

  nextChange() {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  flush() {
    for (const edit of this.queued) this.outcomes.set(edit.id, this.sheet.append(edit.entry));
    this.queued = [];
    this.inFlight = 0;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resolve of waiting) resolve();
  }
}

// Sends what is queued until `promise` (undo, redo: they wait for what they queued
// before) is done.
async function pump(queue, promise) {
  let done = false;
  promise.then(() => { done = true; });
  while (!done) {
    queue.flush();
    await new Promise((resolve) => setImmediate(resolve));
  }
  queue.flush();
}

function setup() {
  const sheet = new FakeSheet();
  const queue = new FakeQueue(sheet);
  const notes = [];
  const history = new UndoHistory();
  let changes = 0;
  history.attach({
    queue,
    read: (rect, at) => sheet.read(rect, at),
    notify: (message, kind) => notes.push({message, kind}),
    describe: (entry) => `${entry.type} ${entry.body.ref || entry.body.at || ''}`.trim(),
    onChange: () => { changes++; },
  });
  // What the grid tab does for an edit of the user's: queue it, record it.
  const edit = (entry, cells) => {
    const baseSeq = sheet.head;
    history.record(entry, cells, baseSeq, queue.add(entry, cells, baseSeq));
  };
  return {sheet, queue, notes, history, edit, changes: () => changes};
}

describe('undo and redo', () => {
  test('an edit is undone by appending the previous value, and redone by appending it again', async () => {
    const {sheet, queue, history, edit} = setup();
    sheet.append({type: 'SetCell', body: {ref: 'B5', value: 45, format: '0.0'}});
    edit({type: 'SetCell', body: {ref: 'B5', value: 46, format: '0.0'}}, [{row: 5, column: 2, value: 46}]);
    queue.flush();
    assert.equal(history.canUndo(), true);
    assert.equal(history.undoLabel(), 'SetCell B5');
    const saved = sheet.head;
    await history.undo();
    assert.deepEqual(queue.added.at(-1), {entry: {type: 'SetCell', body: {ref: 'B5', value: 45, format: '0.0'}},
                                          baseSeq: saved});
    queue.flush();
    assert.equal(sheet.value('B5'), 45);
    assert.equal(history.canUndo(), false);
    assert.equal(history.canRedo(), true);
    await history.redo();
    queue.flush();
    assert.equal(sheet.value('B5'), 46);
    assert.equal(history.canRedo(), false);
    await history.undo();
    queue.flush();
    assert.equal(sheet.value('B5'), 45);
  });

  test('a paste undoes as one step: one entry with every cell it wrote', async () => {
    const {sheet, queue, history, edit} = setup();
    sheet.append({type: 'SetCells', body: {cells: {D1: 'old', E2: {value: 0.5, format: '0%'}}}});
    const rows = [['p', 'q'], ['r', 's']];
    edit({type: 'SetCells', body: {at: 'D1', rows}},
         [{row: 1, column: 4, value: 'p'}, {row: 1, column: 5, value: 'q'},
          {row: 2, column: 4, value: 'r'}, {row: 2, column: 5, value: 's'}]);
    queue.flush();
    const before = sheet.head;
    await history.undo();
    queue.flush();
    assert.equal(sheet.head, before + 1, 'one entry');
    assert.deepEqual(queue.added.at(-1).entry,
                     {type: 'SetCells', body: {cells: {D1: 'old', E1: null, D2: null,
                                                       E2: {value: 0.5, format: '0%'}}}});
    assert.deepEqual((await sheet.read({firstRow: 1, lastRow: 2, firstColumn: 4, lastColumn: 5})).rows,
                     [['old', null], [null, 0.5]]);
  });

  test("a cell someone else changed since is not overwritten; the next undo goes on", async () => {
    const {sheet, queue, notes, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'A1', value: 'one'}}, [{row: 1, column: 1, value: 'one'}]);
    edit({type: 'SetCell', body: {ref: 'B1', value: 'two'}}, [{row: 1, column: 2, value: 'two'}]);
    queue.flush();
    sheet.append({type: 'SetCell', body: {ref: 'B1', value: 'theirs'}});
    const head = sheet.head;
    await history.undo();
    assert.equal(sheet.head, head);
    assert.equal(queue.queued.length, 0, 'nothing appended');
    assert.equal(sheet.value('B1'), 'theirs');
    assert.match(notes.at(-1).message, /^Not undone: B1 was changed by another client since your edit \(it holds "theirs" now\)/);
    assert.equal(notes.at(-1).kind, 'warning');
    assert.equal(history.canRedo(), false, 'the step is dropped');
    await history.undo();
    queue.flush();
    assert.equal(sheet.value('A1'), null);
  });

  test("the user's own later edits of the same cell are no one else's", async () => {
    const {sheet, queue, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'A1', value: 1}}, [{row: 1, column: 1, value: 1}]);
    edit({type: 'SetCell', body: {ref: 'A1', value: 2}}, [{row: 1, column: 1, value: 2}]);
    queue.flush();
    await history.undo();
    queue.flush();
    assert.equal(sheet.value('A1'), 1);
    await history.undo();
    queue.flush();
    assert.equal(sheet.value('A1'), null);
    // Twice in a row, the second asked before the first is saved.
    await pump(queue, Promise.all([history.redo(), history.redo()]));
    assert.equal(sheet.value('A1'), 2);
    await pump(queue, Promise.all([history.undo(), history.undo()]));
    assert.equal(sheet.value('A1'), null);
  });

  test('an edit not sent yet is taken back from the queue; redo queues it again', async () => {
    const {sheet, queue, notes, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'C3', value: 'typed'}}, [{row: 3, column: 3, value: 'typed'}]);
    await history.undo();
    assert.equal(queue.queued.length, 0);
    assert.match(notes.at(-1).message, /not been saved yet/);
    queue.flush();
    assert.equal(sheet.head, 0, 'nothing appended');
    await history.redo();
    queue.flush();
    assert.equal(sheet.value('C3'), 'typed');
    assert.equal(history.canUndo(), true);
  });

  test('an edit on its way is waited for, then undone on the server', async () => {
    const {sheet, queue, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'A2', value: 7}}, [{row: 2, column: 1, value: 7}]);
    queue.inFlight = 1;
    const undone = history.undo();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(queue.queued.length, 1, 'still on its way');
    queue.flush();
    await undone;
    queue.flush();
    assert.equal(sheet.value('A2'), null);
    assert.equal(sheet.head, 2, 'the edit and its undo');
  });

  test('a new edit clears what could be redone; nothing to undo is said', async () => {
    const {queue, notes, history, edit} = setup();
    await history.undo();
    assert.equal(notes.at(-1).message, 'Nothing to undo');
    edit({type: 'SetCell', body: {ref: 'A1', value: 1}}, [{row: 1, column: 1, value: 1}]);
    queue.flush();
    await history.undo();
    queue.flush();
    assert.equal(history.canRedo(), true);
    edit({type: 'SetCell', body: {ref: 'A1', value: 3}}, [{row: 1, column: 1, value: 3}]);
    assert.equal(history.canRedo(), false);
    await history.redo();
    assert.equal(notes.at(-1).message, 'Nothing to redo');
    history.clear();
    assert.equal(history.canUndo(), false);
  });

  test('a read that fails undoes nothing and keeps the step', async () => {
    const {sheet, queue, notes, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'A1', value: 1}}, [{row: 1, column: 1, value: 1}]);
    queue.flush();
    const read = sheet.read;
    sheet.read = () => Promise.reject(new Error('Failed to fetch'));
    await history.undo();
    assert.equal(notes.at(-1).message, 'Undo failed: Failed to fetch');
    assert.equal(notes.at(-1).kind, 'error');
    assert.equal(history.canUndo(), true);
    sheet.read = read;
    await history.undo();
    queue.flush();
    assert.equal(sheet.value('A1'), null);
  });

  test('leaving the page keeps the steps it can follow', async () => {
    const {queue, history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'A1', value: 1}}, [{row: 1, column: 1, value: 1}]);
    queue.flush();
    edit({type: 'SetCell', body: {ref: 'B1', value: 2}}, [{row: 1, column: 2, value: 2}]);
    await history.undo();  // B1: taken back before it was sent
    edit({type: 'SetCell', body: {ref: 'A2', value: 2}}, [{row: 2, column: 1, value: 2}]);
    assert.equal(history.canRedo(), false, 'a new edit clears redo');
    history.detach();
    assert.deepEqual(history.undoStack.map((s) => s.forward.seq), [1], 'A2 still queued: gone');
  });

  test('a step taken back before it was sent stays redoable across pages', async () => {
    const {history, edit} = setup();
    edit({type: 'SetCell', body: {ref: 'B1', value: 2}}, [{row: 1, column: 2, value: 2}]);
    await history.undo();
    history.detach();
    assert.equal(history.redoStack.length, 1);
  });

  test('entries, comparisons and cell lists', () => {
    assert.deepEqual(entryForCells([{row: 2, column: 3, value: null, format: ''}]),
                     {type: 'SetCell', body: {ref: 'C2', value: null}});
    assert.deepEqual(entryForCells([{row: 2, column: 3, value: 4, format: '0.0'},
                                    {row: 9, column: 1, value: 'x'}]),
                     {type: 'SetCells', body: {cells: {C2: {value: 4, format: '0.0'}, A9: 'x'}}});
    assert.equal(sameCellValue(null, undefined), true);
    assert.equal(sameCellValue('1', 1), false);
    assert.equal(sameCellValue(true, true), true);
    const rect = {firstRow: 1, lastRow: 1, firstColumn: 1, lastColumn: 2};
    assert.deepEqual(changedCells([{row: 1, column: 1, value: 'a'}, {row: 1, column: 2, value: 2}], rect,
                                  {rows: [['a', 3]], at_seq: 4}),
                     [{row: 1, column: 2, value: 3, format: ''}]);
    assert.equal(cellList([{row: 1, column: 2}]), 'B1');
    assert.equal(cellList([{row: 1, column: 2}, {row: 4, column: 3}]), 'B1 and C4');
    assert.equal(cellList([{row: 1, column: 1}, {row: 1, column: 2}, {row: 1, column: 3},
                           {row: 1, column: 4}]), 'A1, B1 and 2 more cells');
  });
});

describe('expect_seq of consecutive edits', () => {
  test("moves past this page's own appends only", () => {
    assert.equal(chainedExpect(5, new Set()), 5);
    assert.equal(chainedExpect(5, new Set([5, 6, 7])), 8, 'the user typed on: three of ours');
    assert.equal(chainedExpect(5, new Set([6, 7])), 5, 'seq 5 is someone else\'s: judged by a 409');
    assert.equal(chainedExpect(9, new Set([5, 6, 7])), 9);
  });
});

describe('undo keys', () => {
  const key = (k, mods = {}) => ({key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods});
  test('Ctrl or Cmd with Z, Y, Shift+Z', () => {
    assert.equal(historyKey(key('z', {ctrlKey: true})), 'undo');
    assert.equal(historyKey(key('z', {metaKey: true})), 'undo');
    assert.equal(historyKey(key('Z', {ctrlKey: true, shiftKey: true})), 'redo');
    assert.equal(historyKey(key('Z', {metaKey: true, shiftKey: true})), 'redo');
    assert.equal(historyKey(key('y', {ctrlKey: true})), 'redo');
    assert.equal(historyKey(key('z')), null, 'a plain z is typing');
    assert.equal(historyKey(key('z', {ctrlKey: true, altKey: true})), null, 'AltGr+Z is a character');
    assert.equal(historyKey(key('c', {ctrlKey: true})), null);
  });
});

describe('the view of the past', () => {
  test('the head is live; earlier seqs stay within the log', () => {
    assert.equal(viewSeq(null, 0, 10), null);
    assert.equal(viewSeq(10, 0, 10), null, 'the slider at the head: live');
    assert.equal(viewSeq(12, 0, 10), null);
    assert.equal(viewSeq(9, 0, 10), 9);
    assert.equal(viewSeq(2, 5, 10), 5, 'before the retained log: its first seq');
    assert.equal(viewSeq(Number.NaN, 0, 10), null);
  });

  test('?at= in the address', () => {
    assert.equal(atParam('12'), 12);
    assert.equal(atParam('0'), 0);
    assert.equal(atParam(null), null);
    assert.equal(atParam(''), null);
    assert.equal(atParam('x'), null);
    assert.equal(atParam('-1'), null);
  });
});

describe('fault points', () => {
  test("from the server's list, or from its refusal of an unknown point", () => {
    assert.deepEqual(knownFaultPoints({points: ['blob.put', {name: 'queue.send'}, {point: 'x.y'}]}),
                     ['blob.put', 'queue.send', 'x.y']);
    const refusal = "unknown fault point 'console.no-such-point' (known points: blob.put, " +
                    'blob.put.after_body, snapshot.after_complete)';
    assert.deepEqual(knownFaultPoints(refusal), ['blob.put', 'blob.put.after_body', 'snapshot.after_complete']);
    assert.deepEqual(knownFaultPoints({error: {message: refusal}}).length, 3);
    assert.deepEqual(knownFaultPoints({armed: []}), []);
    assert.deepEqual(knownFaultPoints('fault points can be armed only with --enable-faults'), []);
  });
});

describe('stored times', () => {
  test('seconds, milliseconds and microseconds as local date and time', () => {
    const tz = process.env.TZ;
    try {
      process.env.TZ = 'Asia/Kolkata';  // UTC+05:30, no daylight saving
      assert.equal(formatStoredTime(1767225600), '2026-01-01 05:30:00');
      assert.equal(formatStoredTime(1767225600250), '2026-01-01 05:30:00.250');
      assert.equal(formatStoredTime(1767225600000125), '2026-01-01 05:30:00.000125');
      assert.equal(formatStoredTime(1767225600000000), '2026-01-01 05:30:00', 'no fraction: none shown');
      process.env.TZ = 'UTC';
      assert.equal(formatStoredTime(1767225600), '2026-01-01 00:00:00');
    } finally {
      if (tz === undefined) delete process.env.TZ;
      else process.env.TZ = tz;
    }
    assert.equal(formatStoredTime(0), '');
    assert.equal(formatStoredTime('1767225600'), '');
    assert.equal(formatStoredTime(1e18), '');
    assert.deepEqual(storedTime(1767225600), {micros: 1767225600e6, digits: 0});
  });

  test('which attributes are times', () => {
    for (const name of ['created', 'modified', 'expires', 'deleted', 'created_at', 'started_micros']) {
      assert.equal(isTimeAttribute(name), true, name);
    }
    for (const name of ['seq', 'num', 'active', 'increment', 'first_seq', 'format']) {
      assert.equal(isTimeAttribute(name), false, name);
    }
  });
});

describe('the navigation on a narrow screen', () => {
  test('hints at the edges with more beyond them', () => {
    assert.deepEqual(navOverflow({scrollLeft: 0, scrollWidth: 300, clientWidth: 300}),
                     {left: false, right: false});
    assert.deepEqual(navOverflow({scrollLeft: 0, scrollWidth: 500, clientWidth: 366}),
                     {left: false, right: true});
    assert.deepEqual(navOverflow({scrollLeft: 60, scrollWidth: 500, clientWidth: 366}),
                     {left: true, right: true});
    assert.deepEqual(navOverflow({scrollLeft: 134, scrollWidth: 500, clientWidth: 366}),
                     {left: true, right: false});
  });
});
