// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The grid tab of a sheet: the formula bar, undo and redo of the user's own edits
// (undo.js), the rows-and-columns menu, freezing row 1, "snapshot now", the history bar
// (the sheet as of any seq, read-only: every write is refused, visibly, until the view
// is back at the head), and the grid, whose edits go through the EditQueue (pending,
// retried, judged per cell on conflict). Formulas show their values (formulas.js, over
// the sheet's used range read at the seq shown); entries are read as a spreadsheet reads
// them (parseEntry: "1,234.50", "5%", "$12", dates become numbers with a number format
// kept on the cell through the API's per-cell format); pasted formulas move with the
// cells; column widths (dragged on the header) are kept per sheet in localStorage, the
// API having no column metadata; Ctrl+F finds in values and formulas.
import {cellRef, columnName, displayValue, editText, isDayFormat, parseEntry, parseRef, shiftFormula}
  from '../a1.js';
import {get, post, query, sheetPath} from '../api.js';
import {EditQueue} from '../edits.js';
import {cellsOf, describeEntry} from '../entries.js';
import {formatCell, formatNumber, formatTime} from '../format.js';
import {FormulaEvaluator, SheetCells, findCells, isCellError, isFormula, nextMatch} from '../formulas.js';
import {GRID_COLUMNS, GRID_ROWS, VirtualGrid, historyKey} from '../grid.js';
import {badge, button, clear, el, modal, toast} from '../ui.js';
import {UndoHistory} from '../undo.js';

const FREEZE_KEY = 'sheetlog.freeze.';
const WIDTHS_KEY = 'sheetlog.widths.';
// The undo history of each sheet for this page session: it outlives a visit to another
// tab of the sheet (a reload starts afresh).
/** @type {Map<string, UndoHistory>} */
const undoHistories = new Map();
// How long one "read-only" message stands for the attempts after it.
const REFUSAL_MS = 2500;

/**
 * The seq to show for a requested one: null (live) at or past the head, else within the
 * retained log.
 * @param {number|null} seq
 * @param {number} firstSeq
 * @param {number} head the last seq
 * @returns {number|null}
 */
export function viewSeq(seq, firstSeq, head) {
  if (seq === null || !Number.isFinite(seq) || seq >= head) return null;
  return Math.max(seq, firstSeq);
}

/**
 * A value as the grid shows it under its format: errors as their code.
 * @param {any} value
 * @param {string} format
 */
function shownText(value, format) {
  return isCellError(value) ? value.error : formatCell(value, format);
}

/**
 * Whether two cell values are the same (a no-op edit appends nothing).
 * @param {any} a
 * @param {any} b
 */
export function sameValue(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * @param {HTMLElement} body
 * @param {any} ctx the sheet page's context (id, info, nextSeq, feed, listeners)
 * @param {URLSearchParams} params
 */
export function renderGridTab(body, ctx, params) {
  const {id} = ctx;
  /** @type {{at: number|null, ownSeqs: Set<number>}} */
  const state = {at: null, ownSeqs: new Set()};
  let snapshotting = false;  // "Snapshot now" waiting for its answer
  const initialAt = params.get('at');
  let usedCache = /** @type {{seq: number, value: Promise<{lastRow: number, lastColumn: number}>}|null} */ (null);

  // Formula bar: the active cell's reference (type one to go there) and its content
  // (a formula as text). Neither is overwritten while the user is typing in it.
  const refBox = /** @type {HTMLInputElement} */ (el('input.input.ref-box#goto-cell', {
    value: 'A1', spellcheck: 'false', autocomplete: 'off',
    title: 'Type a cell (B7) and press Enter to go there',
    onkeydown(/** @type {KeyboardEvent} */ event) {
      if (event.key === 'Escape') {
        refDirty = false;
        refBox.value = cellRef(grid.active.row, grid.active.column);
        grid.focus();
        return;
      }
      if (event.key !== 'Enter') return;
      event.preventDefault();
      const ref = parseRef(refBox.value);
      if (ref && ref.row <= GRID_ROWS && ref.column <= GRID_COLUMNS) {
        refDirty = false;
        grid.setActive(ref.row, ref.column);
        grid.focus();
      } else {
        toast(`'${refBox.value}' is not a cell reference`, 'warning');
      }
    },
    oninput() { refDirty = true; },
    onblur() {
      if (!refDirty) return;
      refDirty = false;
      refBox.value = cellRef(grid.active.row, grid.active.column);
    },
  }));
  let refDirty = false;
  // The formula bar's edit: the cell it edits and the seq its content was read at.
  /** @type {null|{row: number, column: number, baseSeq: number|null}} */
  let formulaEdit = null;
  const formulaInput = /** @type {HTMLInputElement} */ (el('input.input.formula-input#formula-input', {
    spellcheck: 'false', autocomplete: 'off', placeholder: 'Value or =formula',
    oninput() {
      if (!formulaEdit) {
        const {row, column} = grid.active;
        formulaEdit = {row, column, baseSeq: grid.seqAt(row, column)};
      }
    },
    onkeydown(/** @type {KeyboardEvent} */ event) {
      if (formulaInput.readOnly && (event.key === 'Enter' || event.key === 'Delete' ||
          (event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey))) {
        refuseReadOnly('edit');  // the past is shown: the bar only shows the cell
        return;
      }
      if (event.key === 'Enter') {
        event.preventDefault();
        const target = formulaEdit || {...grid.active, baseSeq: grid.seqAt(grid.active.row, grid.active.column)};
        formulaEdit = null;
        commit(target.row, target.column, formulaInput.value, target.baseSeq);
        grid.focus();
      } else if (event.key === 'Escape') {
        event.preventDefault();
        formulaEdit = null;
        showActive(grid.active.row, grid.active.column, grid.cellAt(grid.active.row, grid.active.column));
        grid.focus();
      }
    },
  }));
  const cellInfo = el('span.cell-info');
  const formulaBar = el('div.formula-bar', {},
                        el('label.sr-only', {for: 'goto-cell'}, 'Go to cell'), refBox,
                        el('label.fx', {for: 'formula-input', title: 'Cell content'},
                           el('span', {'aria-hidden': 'true'}, 'fx'),
                           el('span.sr-only', 'Cell content')),
                        formulaInput, cellInfo);

  const structureMenu = el('details.menu#structure-menu', {},
                           el('summary.btn.btn-small', 'Rows & columns'),
                           el('div.menu-items', {role: 'group', 'aria-label': 'Rows and columns'},
                              button('Insert row above', () => structural('InsertRows', -1), 'small'),
                              button('Insert row below', () => structural('InsertRows', 0), 'small'),
                              button('Delete row', () => structural('DeleteRows'), 'small'),
                              button('Insert column left', () => structural('InsertColumns', -1), 'small'),
                              button('Insert column right', () => structural('InsertColumns', 0), 'small'),
                              button('Delete column', () => structural('DeleteColumns'), 'small')));
  const freezeButton = button('Freeze row 1', () => setFrozen(grid.frozenRows === 0), 'small', {
    'aria-pressed': 'false', id: 'freeze-row',
  });
  const snapshotButton = button('Snapshot now', () => snapshotNow(), 'small', {
    id: 'snapshot-now',
    title: 'Append a Snapshot entry now: reads of deep rows start from it once it is built',
  });
  const undoButton = button('Undo', () => undo(), 'small', {
    id: 'undo', 'aria-keyshortcuts': 'Control+Z Meta+Z', disabled: true,
  });
  const redoButton = button('Redo', () => redo(), 'small', {
    id: 'redo', 'aria-keyshortcuts': 'Control+Y Control+Shift+Z Meta+Shift+Z', disabled: true,
  });
  const findButton = button('Find', () => openFind(), 'small', {
    id: 'find-open', 'aria-keyshortcuts': 'Control+F Meta+F', title: 'Find in the sheet (Ctrl+F)',
  });
  const tools = el('div.grid-tools', {}, undoButton, redoButton, structureMenu, freezeButton,
                   snapshotButton, findButton);

  // History bar: the grid as of any seq of the retained log.
  const slider = /** @type {HTMLInputElement} */ (el('input.history-slider', {
    type: 'range', min: ctx.info.first_seq, max: Math.max(ctx.info.first_seq, ctx.nextSeq - 1),
    value: ctx.nextSeq - 1, 'aria-label': 'History: show the sheet as of seq',
    oninput: () => previewSeq(Number(slider.value)),
    onchange: () => travelTo(Number(slider.value)),
  }));
  const seqInput = /** @type {HTMLInputElement} */ (el('input.input.history-seq#history-seq', {
    type: 'number', min: ctx.info.first_seq, inputmode: 'numeric',
    onkeydown(/** @type {KeyboardEvent} */ event) {
      if (event.key === 'Enter') travelTo(Number(seqInput.value));
    },
  }));
  const liveButton = button('Back to live', () => travelTo(null), 'small', {hidden: true, id: 'back-to-live'});
  // A new sheet whose log is this one's up to the seq shown (the head when live):
  // POST .../fork, then the new sheet's grid. Allowed in history mode too: forking the
  // past is how one edits it without touching this sheet.
  const forkButton = button('Fork at this seq', () => forkHere(), 'small', {
    id: 'fork-here', title: 'A new sheet with this sheet\'s cells and history up to the seq shown',
  });
  const historyBar = el('div.history-bar', {},
                        el('span.history-label', {'aria-hidden': 'true'}, 'History'),
                        button('◀', () => travelTo((state.at ?? ctx.nextSeq - 1) - 1),
                               'small.btn-icon', {'aria-label': 'Previous seq'}),
                        slider,
                        button('▶', () => travelTo((state.at ?? ctx.nextSeq - 1) + 1),
                               'small.btn-icon', {'aria-label': 'Next seq'}),
                        el('label.history-seq-label', {for: 'history-seq'}, 'Seq'),
                        seqInput, liveButton, forkButton);
  const banner = el('div.notice.notice-history#history-banner', {hidden: true, role: 'status'});
  const editStatus = el('div.edit-status#edit-status', {role: 'status', 'aria-live': 'polite'});
  const gridHost = el('div.grid-host');
  body.append(el('div.grid-toolbar', {}, formulaBar, tools), historyBar, banner, editStatus,
              gridHost);

  const grid = new VirtualGrid(gridHost, {
    label: `Sheet ${ctx.info.name || id}`,
    loadTile: (range, signal) =>
      get(sheetPath(id, '/cells') + query({range, at: state.at}), {signal}),
    onCommit: ({row, column, text, baseSeq}) => commit(row, column, text, baseSeq),
    onPaste: ({row, column, rows, baseSeq, shift}) => paste(row, column, rows, baseSeq, shift),
    onClear: ({rect, baseSeq}) => clearRect(rect, baseSeq),
    onActiveChange: showActive,
    usedRange,
    onLeave: () => {
      refBox.focus();
      refBox.select();
    },
    onUndo: () => undo(),
    onRedo: () => redo(),
    onReadOnly: () => refuseReadOnly('edit'),
    evaluate: (row, column) => computed(row, column),
    onColumnWidths: (widths) => {
      try {
        if (widths.size === 0) localStorage.removeItem(WIDTHS_KEY + id);
        else localStorage.setItem(WIDTHS_KEY + id, JSON.stringify([...widths]));
      } catch { /* storage disabled */ }
    },
  });

  // --- formulas: the sheet's cells at the seq shown, computed on demand ---
  const sheetCells = new SheetCells({
    usedRange: (at) => get(sheetPath(id, '/used-range') + query({at})).then((r) => ({
      lastRow: r.last_row, lastColumn: r.last_column,
    })),
    read: (range, at) => get(sheetPath(id, '/cells') + query({range, at})),
  });
  /**
   * A cell's content for formulas: the user's value on its way, else the loaded tile's,
   * else the sheet read for formulas.
   * @param {number} row
   * @param {number} column
   */
  function content(row, column) {
    const mine = grid.overlayAt(row, column);
    if (mine) return mine.value;
    const loaded = grid.serverCellAt(row, column);
    if (loaded) return loaded.value;
    return sheetCells.get(row, column) ?? null;
  }
  // Ranges and whole columns end at the used range (or the loaded cells, whichever is
  // further: the user's own values on their way may be beyond it).
  /** @type {{version: number, lastRow: number, lastColumn: number}} */
  let extent = {version: -1, lastRow: 0, lastColumn: 0};
  const evaluator = new FormulaEvaluator(content, () => {
    if (extent.version !== grid.version) {
      const loaded = grid.loadedExtent();
      extent = {version: grid.version, lastRow: Math.max(sheetCells.lastRow, loaded.lastRow),
                lastColumn: Math.max(sheetCells.lastColumn, loaded.lastColumn)};
    }
    return extent;
  });
  let evaluatedVersion = -1;
  /**
   * A formula's value (undefined when the sheet is too big to have been read for it and
   * its cells are not loaded: the grid then shows the value the import cached, if any).
   * @param {number} row
   * @param {number} column
   */
  function computed(row, column) {
    formulasSeen = true;
    if (cellsStale) {
      cellsStale = false;
      queueMicrotask(() => refreshFormulas());
    }
    // A sheet too big to read whole: a value the import cached stands (the cells the
    // formula needs may not be loaded).
    if (!sheetCells.complete) {
      const cached = grid.serverCellAt(row, column)?.cached;
      if (cached !== null && cached !== undefined) return undefined;
    }
    if (grid.version !== evaluatedVersion) {
      evaluatedVersion = grid.version;
      evaluator.reset();
    }
    return evaluator.value(row, column);
  }
  // The sheet is read for formulas only once one is shown (or Find is open): a sheet
  // without formulas costs no more than its tiles. One read at a time; a change
  // meanwhile reads again after it.
  let formulasSeen = false;
  let cellsStale = true;
  let cellsLoading = false;
  let cellsDirty = false;
  async function refreshFormulas() {
    if (!formulasSeen && !find.open) {
      cellsStale = true;
      return;
    }
    cellsStale = false;
    if (cellsLoading) {
      cellsDirty = true;
      return;
    }
    cellsLoading = true;
    try {
      do {
        cellsDirty = false;
        try {
          if (await sheetCells.load(state.at, cellRef)) {
            grid.version++;
            grid.queueRender();
            showActive(grid.active.row, grid.active.column, grid.cellAt(grid.active.row, grid.active.column));
            if (find.open) findAgain();
          }
        } catch { /* the server is unreachable: the grid says so; the next change retries */ }
      } while (cellsDirty);
    } finally {
      cellsLoading = false;
    }
  }

  // --- find (Ctrl+F): in the shown values and in the formulas ---
  const findInput = /** @type {HTMLInputElement} */ (el('input.input.find-input#find-input', {
    type: 'search', spellcheck: 'false', autocomplete: 'off', placeholder: 'Find in sheet',
    'aria-label': 'Find in sheet',
    oninput: () => findAgain(),
    onkeydown(/** @type {KeyboardEvent} */ event) {
      if (event.key === 'Enter') {
        event.preventDefault();
        findStep(event.shiftKey ? -1 : 1);
      } else if (event.key === 'Escape') {
        event.preventDefault();
        closeFind();
      }
    },
  }));
  const findStatus = el('span.find-status#find-status', {role: 'status', 'aria-live': 'polite'});
  const findBar = el('div.find-bar#find-bar', {hidden: true, role: 'search'},
                     findInput, findStatus,
                     button('Previous', () => findStep(-1), 'small', {'aria-keyshortcuts': 'Shift+Enter'}),
                     button('Next', () => findStep(1), 'small', {'aria-keyshortcuts': 'Enter'}),
                     button('Close', () => closeFind(), 'small', {'aria-keyshortcuts': 'Escape'}));
  gridHost.before(findBar);
  /** @type {{open: boolean, matches: {row: number, column: number}[], index: number}} */
  const find = {open: false, matches: [], index: -1};
  function openFind() {
    find.open = true;
    findBar.hidden = false;
    if (cellsStale) refreshFormulas();
    findInput.focus();
    findInput.select();
    findAgain();
  }
  function closeFind() {
    find.open = false;
    findBar.hidden = true;
    find.matches = [];
    find.index = -1;
    grid.setFound(null);
    grid.focus();
  }
  // The matches for what the find box holds, from the sheet read for formulas (the whole
  // used range) and the user's values on their way.
  function findAgain() {
    const needle = findInput.value;
    /** @type {Map<string, any>} */
    const cells = new Map(sheetCells.cells);
    for (const [key, mine] of grid.overlay) cells.set(key, mine.value);
    find.matches = findCells([...cells].filter(([, v]) => v !== null && v !== ''), needle, (row, column, value) => {
      const format = grid.serverCellAt(row, column)?.format || sheetCells.formats.get(`${row}:${column}`) || '';
      return shownText(isFormula(value) ? computed(row, column) : value, format);
    });
    find.index = -1;
    if (needle && find.matches.length) {
      findStep(1, true);
    } else {
      grid.setFound(null);
      findStatus.textContent = needle ? (sheetCells.complete ? 'No match' : 'No match in the cells read') : '';
    }
  }
  /**
   * @param {1|-1} step
   * @param {boolean} [fromActive] start at the active cell itself (a new search)
   */
  function findStep(step, fromActive = false) {
    if (find.matches.length === 0) return;
    const at = find.index >= 0 && !fromActive ? find.matches[find.index] : grid.active;
    let i = nextMatch(find.matches, at, step);
    if (fromActive) {
      const same = find.matches.findIndex((m) => m.row === grid.active.row && m.column === grid.active.column);
      if (same >= 0) i = same;
    }
    find.index = i;
    const match = find.matches[i];
    grid.setActive(match.row, match.column);
    grid.setFound(match);
    findStatus.textContent = `${i + 1} of ${find.matches.length}`;
  }

  const edits = new EditQueue({
    sheetId: id,
    grid,
    knownHead: () => ctx.nextSeq,
    describe: describeEntry,
    onSaved(seq, nextSeq) {
      state.ownSeqs.add(seq);
      ctx.nextSeq = Math.max(ctx.nextSeq, nextSeq);
      ctx.feed?.refresh();
      grid.invalidate();
      refreshFormulas();
    },
    onChange: showEdits,
  });

  let undoHistory = undoHistories.get(id);
  if (!undoHistory) {
    undoHistory = new UndoHistory();
    undoHistories.set(id, undoHistory);
  }
  const steps = undoHistory;
  steps.attach({
    queue: edits,
    read: (rect, at) => get(sheetPath(id, '/cells') + query({
      range: `${cellRef(rect.firstRow, rect.firstColumn)}:${cellRef(rect.lastRow, rect.lastColumn)}`,
      at,
    })),
    notify: (message, kind) => toast(message, kind),
    describe: (entry) => describeEntry({seq: 0, ...entry}),
    onChange: syncWriteControls,
  });

  /** @type {HTMLElement|null} the "read-only" message standing */
  let refusal = null;
  let refusedAt = 0;
  /**
   * Says (once for a burst of attempts) why a write does nothing while the past is shown.
   * @param {string} what
   */
  function refuseReadOnly(what) {
    if (state.at === null) return;
    const now = performance.now();
    if (refusal && refusal.isConnected && now - refusedAt < REFUSAL_MS) return;
    refusedAt = now;
    refusal = toast(`Read-only: you are viewing the sheet as of seq ${formatNumber(state.at)}. ` +
                    `Go back to live to ${what}.`, 'warning');
  }

  function undo() {
    if (state.at !== null) {
      refuseReadOnly('undo');
      return;
    }
    steps.undo();
  }

  function redo() {
    if (state.at !== null) {
      refuseReadOnly('redo');
      return;
    }
    steps.redo();
  }

  // Undo and redo buttons, and every write control: off while the past is shown.
  function syncWriteControls() {
    const past = state.at !== null;
    undoButton.disabled = past || !steps.canUndo();
    redoButton.disabled = past || !steps.canRedo();
    undoButton.title = past ? 'Read-only while viewing the past'
      : steps.canUndo() ? `Undo ${steps.undoLabel()} (Ctrl+Z)` : 'Nothing to undo';
    redoButton.title = past ? 'Read-only while viewing the past'
      : steps.canRedo() ? `Redo ${steps.redoLabel()} (Ctrl+Y)` : 'Nothing to redo';
    snapshotButton.disabled = past || snapshotting;
    for (const item of structureMenu.querySelectorAll('.menu-items button')) {
      /** @type {HTMLButtonElement} */ (item).disabled = past;
    }
    formulaInput.readOnly = past;
  }

  // Ctrl+Z and its kin when the focus is on the page but not in a text field (a button,
  // the page itself): the grid's undo. A text field keeps its own undo; the grid's input
  // hands the keys to the grid (onUndo, onRedo).
  /** @param {KeyboardEvent} event */
  function onPageKey(event) {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === 'f') {
      event.preventDefault();  // the sheet's find, not the browser's (it sees only the view)
      openFind();
      return;
    }
    const action = historyKey(event);
    if (!action || event.defaultPrevented) return;
    const target = /** @type {HTMLElement} */ (event.target);
    if (target.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"], dialog')) return;
    event.preventDefault();
    if (action === 'undo') undo();
    else redo();
  }
  document.addEventListener('keydown', onPageKey);

  function setFrozen(/** @type {boolean} */ on) {
    grid.setFrozenRows(on ? 1 : 0);
    freezeButton.setAttribute('aria-pressed', String(on));
    freezeButton.classList.toggle('btn-pressed', on);
    try {
      if (on) localStorage.setItem(FREEZE_KEY + id, '1');
      else localStorage.removeItem(FREEZE_KEY + id);
    } catch { /* storage disabled */ }
  }

  /**
   * @param {number} row
   * @param {number} column
   * @param {any} cell
   */
  function showActive(row, column, cell) {
    if (!refDirty || document.activeElement !== refBox) refBox.value = cellRef(row, column);
    // The formula bar keeps what the user is typing in it (a live update re-reads the
    // active cell; it must not wipe the input).
    const typing = formulaEdit !== null && document.activeElement === formulaInput;
    if (typing && formulaEdit && (formulaEdit.row !== row || formulaEdit.column !== column)) {
      formulaEdit = null;
    } else if (typing) {
      return;
    }
    if (!typing) formulaEdit = null;
    formulaInput.value = cell ? editText(cell.value, cell.format, navigator.language) : '';
    const parts = [];
    if (cell && isFormula(cell.value)) {
      const result = computed(row, column);
      const shown = result !== undefined ? result : cell.cached;
      if (shown !== null && shown !== undefined) {
        parts.push(badge(`= ${isCellError(shown) ? shown.error : displayValue(shown)}`,
                         isCellError(shown) ? 'error' : 'info'));
      }
    }
    if (cell && cell.format) parts.push(badge(`format ${cell.format}`, 'muted'));
    clear(cellInfo, parts);
  }

  // The used range at the head, read once per seq (Ctrl+End, Ctrl+arrows).
  function usedRange() {
    const seq = state.at ?? ctx.nextSeq;
    if (!usedCache || usedCache.seq !== seq) {
      usedCache = {
        seq,
        value: get(sheetPath(id, '/used-range') + query({at: state.at})).then((r) => ({
          lastRow: r.last_row, lastColumn: r.last_column,
        })),
      };
      usedCache.value.catch(() => { usedCache = null; });
    }
    return usedCache.value;
  }

  // The banner under the toolbar: conflicts (both values, and the choice), edits the
  // server refused, and edits waiting for the server.
  function showEdits(/** @type {import('../edits.js').Edit[]} */ list) {
    const conflicts = list.filter((e) => e.state === 'conflict');
    const failed = list.filter((e) => e.state === 'failed');
    const rejected = list.filter((e) => e.state === 'rejected');
    const pending = list.filter((e) => e.state === 'pending');
    const items = [];
    for (const edit of conflicts) {
      const where = edit.cells.length === 1 ? cellRef(edit.cells[0].row, edit.cells[0].column)
        : `${cellRef(edit.rect.firstRow, edit.rect.firstColumn)}:${cellRef(edit.rect.lastRow, edit.rect.lastColumn)}`;
      const theirs = edit.theirs;
      const one = edit.cells.length === 1;
      items.push(el('div.notice.notice-warning.conflict-notice', {role: 'alert', dataset: {edit: String(edit.id)}},
                    el('div.conflict-text', {},
                       el('strong', `${where} was changed by another client while you edited it.`), ' ',
                       theirs ? el('span', {}, 'Theirs: ', el('code.theirs', one ? displayValue(theirs.values[0]) : `${theirs.values.length} cells`),
                                   ` (seq ${theirs.seq}: ${theirs.description}). `) : null,
                       el('span', {}, 'Yours: ', el('code.yours', one ? displayValue(edit.cells[0].value) : `${edit.cells.length} cells`), '.')),
                    button('Keep theirs', () => edits.resolve(edit.id, false), 'small'),
                    button('Use mine', () => edits.resolve(edit.id, true), 'small.btn-primary')));
    }
    for (const edit of rejected) {
      items.push(el('div.notice.notice-error', {role: 'alert'},
                    `Not saved: ${describeEntry({seq: 0, ...edit.entry})}: ${edit.error}`,
                    button('Retry', () => edits.retryNow(), 'small'),
                    button('Discard', () => edits.discard(edit.id), 'small')));
    }
    if (failed.length) {
      const waiting = failed.length + pending.length;
      items.push(el('div.notice.notice-error#unsaved-notice', {role: 'alert'},
                    `${waiting} edit${waiting === 1 ? '' : 's'} not saved yet: ` +
                    `${failed[0].error || 'no answer from the server'}. Retrying; ` +
                    'nothing you typed is lost.',
                    button('Retry now', () => edits.retryNow(), 'small')));
    }
    clear(editStatus, items);
  }

  function syncHistoryBar() {
    const head = ctx.nextSeq - 1;
    slider.max = String(Math.max(ctx.info.first_seq, head));
    if (state.at === null) {
      slider.value = String(head);
      seqInput.value = String(head);
    }
    seqInput.max = String(head);
  }

  /**
   * An edit typed into a cell (or the formula bar). Nothing is appended when it does
   * not change the cell.
   * @param {number} row
   * @param {number} column
   * @param {string} text
   * @param {number|null} baseSeq
   */
  function commit(row, column, text, baseSeq) {
    if (state.at !== null) {
      refuseReadOnly('edit');
      return;
    }
    const entry = parseEntry(text, navigator.language);
    const value = entry.value;
    const before = grid.cellAt(row, column);
    // The cell's format as shown: the one an edit on its way gives it, else the server's.
    const kept = before?.format || '';
    // The same value is no edit, in a form that gives another format of the same kind
    // too (a date edited as ISO keeps its day format).
    const sameForm = !entry.format || entry.format === kept || (isDayFormat(entry.format) && isDayFormat(kept));
    if (before && sameValue(before.value, value) && sameForm) return;
    if (!before && value === null) return;
    // A number typed in a display form ("5%") takes that form's format; otherwise the
    // cell keeps the one it has.
    const format = entry.format && !(isDayFormat(entry.format) && isDayFormat(kept)) ? entry.format : kept;
    const body = {ref: cellRef(row, column), value, ...(format ? {format} : {})};
    record({type: 'SetCell', body}, [{row, column, value}], baseSeq);
    if (format) grid.setOverlayFormat(row, column, format);
  }

  /**
   * Queues an edit of the user's and makes it a step to undo.
   * @param {{type: string, body: any}} entry
   * @param {{row: number, column: number, value: any}[]} cells
   * @param {number|null} baseSeq
   */
  function record(entry, cells, baseSeq) {
    const editId = edits.add(entry, cells, baseSeq);
    steps.record(entry, cells, baseSeq, editId);
  }

  /**
   * Tab-separated rows pasted at (row, column): one SetCells entry.
   * @param {number} row
   * @param {number} column
   * @param {string[][]} rows
   * @param {number|null} baseSeq
   * @param {{rows: number, columns: number}|null} shift the offset from where the cells
   *        were copied in this grid (their formulas move by it), null for outside text
   */
  function paste(row, column, rows, baseSeq, shift) {
    if (state.at !== null) {
      refuseReadOnly('paste');
      return;
    }
    if (row + rows.length - 1 > GRID_ROWS ||
        column + Math.max(...rows.map((r) => r.length)) - 1 > GRID_COLUMNS) {
      toast('The pasted range does not fit on the sheet from here', 'warning');
      return;
    }
    const parsed = rows.map((r) => r.map((text) => {
      const entry = parseEntry(text, navigator.language);
      if (shift && isFormula(entry.value) && (shift.rows || shift.columns)) {
        entry.value = `=${shiftFormula(entry.value.slice(1), shift.rows, shift.columns)}`;
      }
      return entry;
    }));
    /** @type {{row: number, column: number, value: any}[]} */
    const cells = [];
    parsed.forEach((r, i) => r.forEach((e, j) => cells.push({row: row + i, column: column + j, value: e.value})));
    if (parsed.some((r) => r.some((e) => e.format))) {
      // Formats go with each cell: the cells form of SetCells.
      /** @type {Record<string, any>} */
      const map = {};
      parsed.forEach((r, i) => r.forEach((e, j) => {
        map[cellRef(row + i, column + j)] = e.format ? {value: e.value, format: e.format} : e.value;
      }));
      record({type: 'SetCells', body: {cells: map}}, cells, baseSeq);
      parsed.forEach((r, i) => r.forEach((e, j) => {
        if (e.format) grid.setOverlayFormat(row + i, column + j, e.format);
      }));
    } else {
      record({type: 'SetCells', body: {at: cellRef(row, column), rows: parsed.map((r) => r.map((e) => e.value))}},
             cells, baseSeq);
    }
  }

  /**
   * Delete on a selection: clears its cells that hold a value (formats stay, as a
   * spreadsheet's Delete leaves them); nothing when none does.
   * @param {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}} rect
   * @param {number|null} baseSeq
   */
  async function clearRect(rect, baseSeq) {
    if (state.at !== null) {
      refuseReadOnly('clear cells');
      return;
    }
    const count = (rect.lastRow - rect.firstRow + 1) * (rect.lastColumn - rect.firstColumn + 1);
    if (count > 100000) {
      toast('Select at most 100,000 cells to clear', 'warning');
      return;
    }
    /** @type {{row: number, column: number, value: any, format: string}[]} */
    const filled = [];
    let complete = true;
    for (let r = rect.firstRow; r <= rect.lastRow && complete; r++) {
      for (let c = rect.firstColumn; c <= rect.lastColumn; c++) {
        const cell = grid.cellAt(r, c);
        if (!cell) {
          complete = false;
          break;
        }
        if (cell.value !== null) filled.push({row: r, column: c, value: null, format: cell.format});
      }
    }
    if (!complete) {
      filled.length = 0;
      try {
        const data = await get(sheetPath(id, '/cells') + query({
          range: `${cellRef(rect.firstRow, rect.firstColumn)}:${cellRef(rect.lastRow, rect.lastColumn)}`,
        }));
        data.rows.forEach((/** @type {any[]} */ r, /** @type {number} */ i) => r.forEach((v, j) => {
          if (v !== null) {
            filled.push({row: rect.firstRow + i, column: rect.firstColumn + j, value: null,
                         format: data.formats?.[i]?.[j] || ''});
          }
        }));
        baseSeq = data.at_seq;
      } catch (error) {
        toast(`Could not clear: ${/** @type {Error} */ (error).message}`, 'error');
        return;
      }
    }
    if (filled.length === 0) return;  // nothing to clear: no entry
    if (state.at !== null) return;  // the past came into view while the cells were read
    const spec = (/** @type {{format: string}} */ c) => (c.format ? {value: null, format: c.format} : null);
    const entry = filled.length === 1
      ? {type: 'SetCell', body: {ref: cellRef(filled[0].row, filled[0].column), value: null,
                                 ...(filled[0].format ? {format: filled[0].format} : {})}}
      : {type: 'SetCells', body: {cells: Object.fromEntries(filled.map((c) => [cellRef(c.row, c.column), spec(c)]))}};
    record(entry, filled.map(({row, column}) => ({row, column, value: null})), baseSeq);
  }

  /**
   * @param {'InsertRows'|'DeleteRows'|'InsertColumns'|'DeleteColumns'} type
   * @param {number} [offset]
   */
  async function structural(type, offset = 0) {
    structureMenu.removeAttribute('open');
    if (state.at !== null) {
      refuseReadOnly('change rows and columns');
      return;
    }
    const {row, column} = grid.active;
    const bodies = {
      InsertRows: () => ({after: row + offset}),
      DeleteRows: () => ({at: row}),
      InsertColumns: () => ({after: column + offset === 0 ? 0 : columnName(column + offset)}),
      DeleteColumns: () => ({at: columnName(column)}),
    };
    try {
      const done = await post(sheetPath(id, '/entries'), {type, body: bodies[type](), expect_seq: ctx.nextSeq});
      state.ownSeqs.add(done.seq);
      edits.noteOwn(done.seq);
      ctx.nextSeq = Math.max(ctx.nextSeq, done.next_seq || done.seq + 1);
      ctx.feed?.refresh();
      grid.invalidate();
      refreshFormulas();
      // The cells the undo history addresses have moved: it cannot be followed any more.
      const forgot = steps.canUndo() || steps.canRedo();
      steps.clear();
      toast(`${type} appended at seq ${done.seq}${forgot ? '; the undo history was cleared (cells moved)' : ''}`,
            'success');
    } catch (error) {
      const e = /** @type {any} */ (error);
      if (e.status === 409) {
        // Rows and columns move every cell after them: never applied over a change the
        // page has not shown yet.
        grid.invalidate();
        toast(`${type} not applied: another client changed the sheet first. Refreshed; ` +
              'try again.', 'warning');
      } else {
        toast(`${type} failed: ${e.message}`, 'error');
      }
    } finally {
      grid.focus();
    }
  }

  async function snapshotNow() {
    if (state.at !== null) {
      refuseReadOnly('take a snapshot');
      return;
    }
    snapshotting = true;
    snapshotButton.disabled = true;
    try {
      const done = await post(sheetPath(id, '/snapshots'), {});
      toast(`Snapshot entry appended at seq ${formatNumber(done.seq)}; the pipeline builds it.`,
            'success');
    } catch (error) {
      toast(`Snapshot failed: ${/** @type {Error} */ (error).message}`, 'error');
    } finally {
      snapshotting = false;
      syncWriteControls();
    }
  }

  async function forkHere() {
    const at = state.at ?? ctx.nextSeq - 1;
    const nameInput = /** @type {HTMLInputElement} */ (el('input.input#fork-name', {
      value: `${ctx.info.name || id.slice(0, 8)} at ${at}`, 'aria-label': 'Name of the fork',
    }));
    const answer = await modal({
      title: `Fork at seq ${formatNumber(at)}`,
      body: el('div', {},
               el('p', 'A new sheet with the same cells and history up to this seq, and a ' +
                  'future of its own. This sheet does not change.'),
               el('label', {for: 'fork-name'}, 'Name'), nameInput),
      actions: [{label: 'Cancel', value: null}, {label: 'Fork', value: 'fork', kind: 'primary'}],
      initialFocus: '#fork-name',
    });
    if (answer !== 'fork') return;
    forkButton.disabled = true;
    try {
      const fork = await post(sheetPath(id, '/fork'), {at, name: nameInput.value.trim()});
      toast(`Forked at seq ${formatNumber(at)}: ${fork.name || fork.id}`, 'success');
      history.pushState(null, '', `/console/sheets/${fork.id}`);
      dispatchEvent(new PopStateEvent('popstate'));
    } catch (error) {
      toast(`Fork failed: ${/** @type {Error} */ (error).message}`, 'error');
    } finally {
      forkButton.disabled = false;
    }
  }

  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let previewTimer;
  function previewSeq(/** @type {number} */ seq) {
    seqInput.value = String(seq);
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => travelTo(seq), 250);
  }

  /**
   * Shows the grid as of `seq` (read-only, with the entry at seq), or live for null. The
   * head itself is live: the view follows new entries and takes edits again.
   * @param {number|null} seq
   */
  async function travelTo(seq) {
    clearTimeout(previewTimer);
    seq = viewSeq(seq, ctx.info.first_seq, ctx.nextSeq - 1);
    const url = new URL(location.href);
    if (seq === null) url.searchParams.delete('at');
    else url.searchParams.set('at', String(seq));
    window.history.replaceState(null, '', url.pathname + url.search);
    if (seq === state.at) {
      if (seq === null) syncHistoryBar();
      return;
    }
    state.at = seq;
    if (seq !== null) formulaEdit = null;
    grid.setReadOnly(seq !== null);  // an edit under way is dropped
    grid.invalidate();
    refreshFormulas();
    liveButton.hidden = seq === null;
    historyBar.classList.toggle('history-active', seq !== null);
    syncWriteControls();
    ctx.setViewAt?.(seq);
    if (seq === null) {
      banner.hidden = true;
      syncHistoryBar();
      return;
    }
    slider.value = String(seq);
    seqInput.value = String(seq);
    banner.hidden = false;
    clear(banner, el('strong', `Read-only: as of seq ${formatNumber(seq)}`), ' · loading entry…');
    try {
      const entry = await get(sheetPath(id, `/entries/${seq}`));
      if (state.at !== seq) return;
      clear(banner,
            el('strong', `Read-only: the sheet as of seq ${formatNumber(seq)}`),
            el('span.banner-entry', {}, ' · changed by ', el('code', describeEntry(entry)),
               ` at ${formatTime(entry.created)}`));
      const changed = cellsOf(entry);
      if (changed.length) grid.flash(changed);
    } catch (error) {
      if (state.at === seq) clear(banner, `As of seq ${seq}: ${/** @type {Error} */ (error).message}`);
    }
  }

  const listener = (/** @type {any[]} */ entries) => {
    syncHistoryBar();
    if (state.at !== null) return;
    const changed = [];
    for (const entry of entries) {
      if (state.ownSeqs.delete(entry.seq)) continue;
      changed.push(...cellsOf(entry));
    }
    grid.invalidate();
    refreshFormulas();
    if (changed.length) grid.flash(changed);
  };
  ctx.listeners.add(listener);

  try {
    if (localStorage.getItem(FREEZE_KEY + id)) setFrozen(true);
    const widths = JSON.parse(localStorage.getItem(WIDTHS_KEY + id) || '[]');
    if (Array.isArray(widths) && widths.length) grid.setColumnWidths(new Map(widths));
  } catch { /* storage disabled, or not what this page wrote */ }
  if (initialAt === null || initialAt === '') refreshFormulas();
  syncHistoryBar();
  syncWriteControls();
  if (initialAt !== null && initialAt !== '') travelTo(Number(initialAt));
  else ctx.setViewAt?.(null);
  grid.focus();
  return () => {
    ctx.listeners.delete(listener);
    document.removeEventListener('keydown', onPageKey);
    steps.detach();
    edits.close();
    grid.destroy();
  };
}
