// @ts-check
// SPDX-License-Identifier: Apache-2.0
// A virtualised spreadsheet grid: the whole XLSX-sized sheet (1,048,576 rows, 16,384
// columns) scrolls natively, while the DOM holds only the cells in view (a pool
// reused as it scrolls) and the data comes in tiles fetched for the visible range and
// the tiles around it (fetched ahead, so that scrolling shows cells, not blanks). ARIA
// grid semantics: role=grid/row/columnheader/rowheader/gridcell with
// aria-rowindex/aria-colindex, the active cell through aria-activedescendant.
//
// Keys go to one text input that sits on the active cell (transparent until editing
// starts): whatever produces text there — a key, an IME composition, a dead key, text
// inserted by assistive technology — starts an edit with that text, nothing lost.
//   arrows, PageUp/Down move (Shift extends the selection; Ctrl goes to the data edge);
//   Home, Ctrl+Home (A1), Ctrl+End (the last used cell); Enter or F2 edits the cell;
//   Delete/Backspace clears the selection; Ctrl+C copies it as tab-separated text and
//   Ctrl+V pastes such text at the active cell; Ctrl+Z undoes, Ctrl+Y and Ctrl+Shift+Z
//   redo (Cmd on a Mac; onUndo/onRedo). While editing, Enter/Tab commit and move
//   (Shift: back), Escape cancels, arrows commit and move when the edit began by typing,
//   and Ctrl+Z takes back the typing (the cell's content again, then no edit). Outside an
//   edit, Tab and Shift+Tab leave the grid and Escape goes to the toolbar (onLeave): the
//   grid is never a keyboard trap.
// The input's own undo history never acts: it spans every edit made in the input (and
// its undo once started an edit with nothing in it, which cleared the cell on Enter).
// Read-only (time travel), an attempt to write calls onReadOnly, so the page can say why
// nothing happens.
//
// The owner supplies the data and decides what an edit means:
//   new VirtualGrid(host, {
//     loadTile(range, signal) -> Promise<{rows, formats?, cached?, at_seq}>
//     onCommit({row, column, text, baseSeq})   an edit typed by the user
//     onPaste({row, column, rows, baseSeq, shift})  tab-separated text pasted at the cell;
//                                              shift: its offset from where it was copied
//     onClear({rect, baseSeq})                 Delete on a selection with something in it
//     onActiveChange(row, column, cell)        cell: {value, format, cached} | null
//     usedRange() -> Promise<{lastRow, lastColumn}>   for Ctrl+End and the data edges
//     onLeave()                                Escape outside an edit
//     onUndo(), onRedo()                       Ctrl+Z, Ctrl+Y / Ctrl+Shift+Z outside an edit
//     onReadOnly()                             typing, Delete or a paste while read-only
//     evaluate(row, column) -> value | {error}  a formula's value (formulas.js); shown
//                                              in the cell, the formula stays its content
//     onColumnWidths(widths)                   a column's width dragged (Map column->px)
//   })
// A paste of cells copied from this grid moves their formulas' relative references by
// the offset from where they were copied (onPaste's `shift`), as spreadsheets do; text
// from elsewhere is pasted as it is. Tab, Tab, ..., Enter while entering a row goes to
// the next row in the column the run of Tabs started from.
// `baseSeq` is the seq after which the cells the user saw were read (a tile's at_seq):
// the owner appends with expect_seq = baseSeq + 1 and judges a conflict by the entries
// since.
import {cellRef, columnName, displayValue, editText, rangeRef} from './a1.js';
import {formatCell} from './format.js';
import {parseTsv, toTsv} from './tsv.js';
import {el} from './ui.js';

export {formatCell};

export const GRID_ROWS = 1048576;
export const GRID_COLUMNS = 16384;
const ROW_HEIGHT = 24;
const COLUMN_WIDTH = 112;
export const MIN_COLUMN_WIDTH = 24;
const MAX_COLUMN_WIDTH = 1200;
// How near a column header's right edge (px) a drag resizes the column.
const RESIZE_EDGE = 5;
const HEADER_HEIGHT = 26;
const ROW_HEADER_WIDTH = 72;
// Beyond this many pixels browsers stop laying out a scroll area (Firefox near 17.9M,
// Chrome near 33.5M), so taller grids map the scroll position proportionally.
const MAX_SCROLL_PIXELS = 15000000;
const TILE_ROWS = 64;
const TILE_COLUMNS = 16;
const MAX_TILES = 400;
const MAX_CONCURRENT_LOADS = 4;
const FLASH_MS = 1600;
// Ctrl+arrow reads a column or row in chunks of this many cells looking for the edge.
const EDGE_CHUNK = 4096;
// The most cells a copy puts on the clipboard.
const MAX_COPY_CELLS = 200000;

/**
 * @typedef {{value: any, format: string, cached: any}} CellData
 * @typedef {{rows: any[][], formats?: string[][], cached?: any[][], at_seq?: number}} TileData
 * @typedef {{state: 'loading'|'ready', data?: TileData, abort?: AbortController}} Tile
 * @typedef {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}} Rect
 * @typedef {{value: any, state: string, title?: string, seq?: number, format?: string}} OverlayCell
 */

/**
 * @param {number} tileRow
 * @param {number} tileColumn
 */
function tileKey(tileRow, tileColumn) {
  return `${tileRow}:${tileColumn}`;
}

/**
 * The cell ranges (as {row, column}) that a Ctrl+arrow from `from` along one axis
 * stops at, Excel's rule: from a filled cell with a filled neighbour, the last filled
 * cell before a gap; otherwise the next filled cell; none: the grid's end.
 * `filled(i)` says whether position i (1-based along the axis) holds a value.
 * Pure: unit-tested.
 * @param {number} from
 * @param {number} step +1 or -1
 * @param {number} end the last position to look at (the used extent or 1)
 * @param {number} gridEnd where to stop when nothing is filled (the grid's edge)
 * @param {(i: number) => boolean} filled
 * @returns {number}
 */
export function dataEdge(from, step, end, gridEnd, filled) {
  const beyond = (/** @type {number} */ i) => (step > 0 ? i > end : i < end);
  const next = from + step;
  if (beyond(next)) return gridEnd;
  if (filled(from) && filled(next)) {
    let i = next;
    while (!beyond(i + step) && filled(i + step)) i += step;
    return i;
  }
  for (let i = next; !beyond(i); i += step) {
    if (filled(i)) return i;
  }
  return gridEnd;
}

/**
 * Whether a key press asks to undo or redo: Ctrl+Z (Cmd+Z) undoes; Ctrl+Y and
 * Ctrl+Shift+Z (Cmd+Shift+Z) redo. By the key's character, so that a layout with Z
 * elsewhere (AZERTY, QWERTZ) undoes with its own Z.
 * @param {{key: string, ctrlKey: boolean, metaKey: boolean, shiftKey: boolean, altKey: boolean}} event
 * @returns {'undo'|'redo'|null}
 */
export function historyKey(event) {
  if (!(event.ctrlKey || event.metaKey) || event.altKey) return null;
  const key = event.key.toLowerCase();
  if (key === 'z') return event.shiftKey ? 'redo' : 'undo';
  if (key === 'y' && !event.shiftKey) return 'redo';
  return null;
}

export class VirtualGrid {
  /**
   * @param {HTMLElement} host
   * @param {{loadTile: (range: string, signal?: AbortSignal) => Promise<TileData>,
   *          onCommit: (edit: {row: number, column: number, text: string, baseSeq: number|null}) => any,
   *          onPaste?: (paste: {row: number, column: number, rows: string[][], baseSeq: number|null,
   *                             shift: {rows: number, columns: number}|null}) => any,
   *          onClear?: (clear: {rect: Rect, baseSeq: number|null}) => any,
   *          onActiveChange?: (row: number, column: number, cell: CellData|null) => void,
   *          usedRange?: () => Promise<{lastRow: number, lastColumn: number}>,
   *          onLeave?: () => void,
   *          onUndo?: () => void,
   *          onRedo?: () => void,
   *          onReadOnly?: () => void,
   *          evaluate?: (row: number, column: number) => any,
   *          onColumnWidths?: (widths: Map<number, number>) => void,
   *          label?: string}} options
   */
  constructor(host, {loadTile, onCommit, onPaste, onClear, onActiveChange, usedRange, onLeave,
                     onUndo, onRedo, onReadOnly, evaluate, onColumnWidths, label = 'Sheet'}) {
    this.loadTile = loadTile;
    this.onCommit = onCommit;
    this.onPaste = onPaste || (() => {});
    this.onClear = onClear || (() => {});
    this.onActiveChange = onActiveChange || (() => {});
    this.usedRange = usedRange || (async () => ({lastRow: 0, lastColumn: 0}));
    this.onLeave = onLeave || (() => {});
    this.onUndo = onUndo || (() => {});
    this.onRedo = onRedo || (() => {});
    this.onReadOnly = onReadOnly || (() => {});
    this.evaluate = evaluate || null;
    this.onColumnWidths = onColumnWidths || (() => {});
    /** @type {Map<number, number>} column -> width in px, for the columns not COLUMN_WIDTH */
    this.widths = new Map();
    /** @type {number[]} the columns of `widths`, ascending */
    this.widthColumns = [];
    /** @type {null|{column: number, startX: number, startWidth: number}} a header edge dragged */
    this.resizing = null;
    /** @type {null|{row: number, column: number}} the cell a find matched (highlighted) */
    this.found = null;
    /** @type {null|number} the column a run of Tab-committed edits started in */
    this.tabStart = null;
    /** @type {null|{text: string, row: number, column: number}} what this grid last copied */
    this.copied = null;
    this.readOnly = false;
    // Bumped whenever a cell's content as shown may have changed (a tile read, the user's
    // value shown or dropped): what was computed from the cells is stale then.
    this.version = 0;
    this.active = {row: 1, column: 1};
    this.anchor = {row: 1, column: 1};  // the other corner of the selection
    /** @type {Map<string, Tile>} */
    this.tiles = new Map();
    /** @type {Map<string, Tile>} tiles of the previous generation, shown until replaced */
    this.stale = new Map();
    this.generation = 0;
    this.loading = 0;
    /** @type {[number, number][]} */
    this.wanted = [];
    /** @type {Map<string, number>} "row:column" -> time the flash ends */
    this.flashes = new Map();
    /** @type {Map<string, OverlayCell>} "row:column" -> the user's value not yet read back */
    this.overlay = new Map();
    /** @type {null|{row: number, column: number, kind: 'enter'|'edit', baseSeq: number|null, original: string}} */
    this.editing = null;
    this.frozenRows = 0;
    this.requestedScroll = null;  // {physical, virtual}: a position we scrolled to
    this.renderQueued = false;
    this.edgeToken = 0;
    this.dragging = false;
    this.viewWidth = 0;
    this.viewHeight = 0;
    this.firstRow = 1;
    this.firstColumn = 1;
    this.poolRows = 0;
    this.poolColumns = 0;
    /** @type {{node: HTMLElement, head: HTMLElement, cellsNode: HTMLElement, cells: HTMLElement[]}[]} */
    this.rows = [];
    /** @type {HTMLElement[]} */
    this.columnHeads = [];
    this.lastTop = 0;
    this.scrollDirection = 1;
    /** @type {null|{node: HTMLElement, head: HTMLElement, cellsNode: HTMLElement, cells: HTMLElement[]}} */
    this.frozenLine = null;

    this.root = el('div.grid', {
      role: 'grid',
      'aria-label': label,
      'aria-rowcount': GRID_ROWS + 1,
      'aria-colcount': GRID_COLUMNS + 1,
      'aria-readonly': 'false',
      'aria-multiselectable': 'true',
    });
    this.scroller = el('div.grid-scroller', {role: 'presentation', tabindex: -1});
    this.content = el('div.grid-content', {role: 'presentation'});
    this.pane = el('div.grid-pane', {role: 'presentation'});
    this.headerRow = el('div.grid-header-row', {role: 'row', 'aria-rowindex': 1});
    this.headerCells = el('div.grid-header-cells', {role: 'presentation'});
    this.headerRow.append(el('div.grid-corner-cell', {role: 'columnheader'}, ''),
                          this.headerCells);
    this.body = el('div.grid-body', {role: 'rowgroup'});
    this.frozen = el('div.grid-frozen', {role: 'presentation', hidden: true});
    // The one input keys go to: transparent on the active cell until an edit starts.
    this.input = /** @type {HTMLInputElement} */ (el('input.grid-input', {
      type: 'text',
      spellcheck: 'false',
      autocomplete: 'off',
      autocapitalize: 'off',
      'aria-label': 'Cell A1',
      'aria-roledescription': 'cell',
    }));
    this.pane.append(this.body, this.frozen, this.headerRow, this.input);
    this.content.append(this.pane);
    this.scroller.append(this.content);
    this.root.append(this.scroller);
    host.append(this.root);

    this.virtualHeight = HEADER_HEIGHT + GRID_ROWS * ROW_HEIGHT;
    this.contentWidth = ROW_HEADER_WIDTH + this.columnLeft(GRID_COLUMNS + 1);
    this.physicalHeight = Math.min(this.virtualHeight, MAX_SCROLL_PIXELS);
    this.content.style.height = `${this.physicalHeight}px`;
    this.content.style.width = `${this.contentWidth}px`;

    this.scroller.addEventListener('scroll', () => this.queueRender(), {passive: true});
    this.input.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.input.addEventListener('beforeinput', (e) => this.onBeforeInput(e));
    this.input.addEventListener('input', (e) => this.onInput(/** @type {InputEvent} */ (e)));
    this.input.addEventListener('compositionstart', () => this.beginTypedEdit());
    this.input.addEventListener('blur', () => {
      if (this.editing) this.commitEditing(null);
      this.root.classList.remove('grid-focused');
    });
    this.input.addEventListener('focus', () => this.root.classList.add('grid-focused'));
    this.input.addEventListener('copy', (e) => this.onCopy(e));
    this.input.addEventListener('paste', (e) => this.onPasteEvent(e));
    this.body.addEventListener('mousedown', (e) => this.onMouseDown(e));
    this.frozen.addEventListener('mousedown', (e) => this.onMouseDown(e));
    this.body.addEventListener('mousemove', (e) => this.onMouseMove(e));
    window.addEventListener('mouseup', this.onMouseUp = () => {
      this.dragging = false;
      if (this.resizing) {
        this.resizing = null;
        this.root.classList.remove('grid-resizing');
        this.onColumnWidths(new Map(this.widths));
      }
    });
    this.body.addEventListener('dblclick', (e) => {
      const ref = this.cellFromEvent(e);
      if (!ref) return;
      this.setActive(ref.row, ref.column, {scroll: false});
      this.startEditing('edit');
    });
    this.headerCells.addEventListener('mousedown', (e) => {
      const head = /** @type {HTMLElement|null} */ (
        /** @type {HTMLElement} */ (e.target).closest('[data-column]'));
      if (!head || !head.dataset.column) return;
      e.preventDefault();
      const edge = this.resizeEdge(head, e);
      if (edge !== null) {
        this.resizing = {column: edge, startX: e.clientX, startWidth: this.columnWidth(edge)};
        this.root.classList.add('grid-resizing');
        return;
      }
      this.setActive(this.active.row, Number(head.dataset.column));
      this.focus();
    });
    // A header's right edge (or the left edge of the next) resizes its column by dragging.
    this.headerCells.addEventListener('mousemove', (e) => {
      if (this.resizing) return;
      const head = /** @type {HTMLElement|null} */ (
        /** @type {HTMLElement} */ (e.target).closest('[data-column]'));
      this.headerCells.classList.toggle('grid-resize-hover',
                                        !!head && this.resizeEdge(head, e) !== null);
    });
    window.addEventListener('mousemove', this.onResizeMove = (/** @type {MouseEvent} */ e) => {
      if (!this.resizing) return;
      const width = this.resizing.startWidth + e.clientX - this.resizing.startX;
      this.setColumnWidth(this.resizing.column, width);
    });
    this.resizeObserver = new ResizeObserver(() => this.layout());
    this.resizeObserver.observe(this.scroller);
  }

  destroy() {
    this.resizeObserver.disconnect();
    window.removeEventListener('mouseup', this.onMouseUp);
    window.removeEventListener('mousemove', this.onResizeMove);
    for (const tile of this.tiles.values()) tile.abort?.abort();
    this.root.remove();
  }

  focus() {
    this.input.focus({preventScroll: true});
  }

  // --- column widths ---

  /** @param {number} column */
  columnWidth(column) {
    return this.widths.get(column) ?? COLUMN_WIDTH;
  }

  /**
   * The x of column `column`'s left edge from column A's (columnLeft(GRID_COLUMNS + 1) is
   * the width of all of them).
   * @param {number} column
   */
  columnLeft(column) {
    let x = (column - 1) * COLUMN_WIDTH;
    for (const c of this.widthColumns) {
      if (c >= column) break;
      x += /** @type {number} */ (this.widths.get(c)) - COLUMN_WIDTH;
    }
    return x;
  }

  /**
   * The column under x (pixels from column A's left edge).
   * @param {number} x
   */
  columnAt(x) {
    let left = 0;
    let column = 1;
    for (const c of this.widthColumns) {
      const plain = (c - column) * COLUMN_WIDTH;
      if (x < left + plain) break;
      left += plain;
      const width = /** @type {number} */ (this.widths.get(c));
      if (x < left + width) return c;
      left += width;
      column = c + 1;
    }
    return Math.min(GRID_COLUMNS, column + Math.floor(Math.max(0, x - left) / COLUMN_WIDTH));
  }

  /**
   * Sets the widths of columns (as kept for the sheet); the others are the default.
   * @param {Map<number, number>} widths
   */
  setColumnWidths(widths) {
    this.widths = new Map();
    for (const [column, width] of widths) {
      if (Number.isInteger(column) && column >= 1 && column <= GRID_COLUMNS && Number.isFinite(width)) {
        const w = Math.round(Math.min(MAX_COLUMN_WIDTH, Math.max(MIN_COLUMN_WIDTH, width)));
        if (w !== COLUMN_WIDTH) this.widths.set(column, w);
      }
    }
    this.widthsChanged();
  }

  /**
   * @param {number} column
   * @param {number} width
   */
  setColumnWidth(column, width) {
    const w = Math.round(Math.min(MAX_COLUMN_WIDTH, Math.max(MIN_COLUMN_WIDTH, width)));
    if (w === this.columnWidth(column)) return;
    if (w === COLUMN_WIDTH) this.widths.delete(column);
    else this.widths.set(column, w);
    this.widthsChanged();
  }

  widthsChanged() {
    this.widthColumns = [...this.widths.keys()].sort((a, b) => a - b);
    this.contentWidth = ROW_HEADER_WIDTH + this.columnLeft(GRID_COLUMNS + 1);
    this.content.style.width = `${this.contentWidth}px`;
    // Narrower columns: more of them in view, the pool grows (it never shrinks here).
    const narrowest = Math.min(COLUMN_WIDTH, ...this.widths.values());
    const needed = Math.ceil((this.viewWidth - ROW_HEADER_WIDTH) / narrowest) + 1;
    if (this.viewWidth > 0 && needed > this.poolColumns) this.buildPool(this.poolRows, needed);
    this.render();
  }

  /**
   * The column whose right edge the pointer is on in a header, or null.
   * @param {HTMLElement} head
   * @param {MouseEvent} event
   * @returns {number|null}
   */
  resizeEdge(head, event) {
    const rect = head.getBoundingClientRect();
    const column = Number(head.dataset.column);
    if (!column) return null;
    if (rect.right - event.clientX <= RESIZE_EDGE) return column;
    if (event.clientX - rect.left <= RESIZE_EDGE && column > 1) return column - 1;
    return null;
  }

  /**
   * Highlights the cell a find matched (null: none).
   * @param {{row: number, column: number}|null} ref
   */
  setFound(ref) {
    this.found = ref;
    this.queueRender();
  }

  hasFocus() {
    return document.activeElement === this.input;
  }

  /** @param {boolean} readOnly */
  setReadOnly(readOnly) {
    this.readOnly = readOnly;
    this.root.setAttribute('aria-readonly', String(readOnly));
    this.root.classList.toggle('grid-readonly', readOnly);
    this.input.readOnly = readOnly;
    if (readOnly) this.cancelEditing();
  }

  /** Keeps the first `rows` rows (0 or 1) in view under the column headers. */
  setFrozenRows(rows) {
    this.frozenRows = rows;
    this.frozen.hidden = rows === 0;
    this.root.classList.toggle('grid-has-frozen', rows > 0);
    this.render();
  }

  // Drops every cached tile (the sheet changed, or the seq shown did): the old values
  // stay on screen until the new ones arrive, so a refresh does not flicker.
  // Two refreshes in a row keep what the first kept: a tile still reloading when the
  // second comes shows its older values, never nothing.
  invalidate() {
    this.generation++;
    const stale = new Map(this.stale);
    for (const [key, tile] of this.tiles) {
      if (tile.state === 'ready') stale.set(key, tile);
      else tile.abort?.abort();
    }
    // Bounded like the tiles: the oldest kept go first.
    for (const key of stale.keys()) {
      if (stale.size <= MAX_TILES) break;
      stale.delete(key);
    }
    this.stale = stale;
    this.tiles = new Map();
    this.queueRender();
  }

  /**
   * Highlights cells that changed (e.g. another client's append) for a moment.
   * @param {{row: number, column: number}[]} refs
   */
  flash(refs) {
    const until = performance.now() + FLASH_MS;
    for (const {row, column} of refs) this.flashes.set(`${row}:${column}`, until);
    this.queueRender();
    setTimeout(() => this.queueRender(), FLASH_MS + 50);
  }

  /**
   * @param {number} row
   * @param {number} column
   */
  tileOf(row, column) {
    const key = tileKey(Math.floor((row - 1) / TILE_ROWS), Math.floor((column - 1) / TILE_COLUMNS));
    const tile = this.tiles.get(key);
    if (tile && tile.state === 'ready') return tile;
    const old = this.stale.get(key);
    return old && old.state === 'ready' ? old : null;
  }

  /**
   * The cell at (row, column) as the server last answered: {value, format, cached}, or
   * null if not loaded.
   * @param {number} row
   * @param {number} column
   * @returns {CellData|null}
   */
  serverCellAt(row, column) {
    const tile = this.tileOf(row, column);
    if (!tile || !tile.data) return null;
    const r = (row - 1) % TILE_ROWS;
    const c = (column - 1) % TILE_COLUMNS;
    const data = tile.data;
    return {
      value: data.rows[r]?.[c] ?? null,
      format: data.formats?.[r]?.[c] || '',
      cached: data.cached?.[r]?.[c] ?? null,
    };
  }

  /**
   * The cell as shown: the user's own value while it is on its way (or failed),
   * otherwise the server's.
   * @param {number} row
   * @param {number} column
   * @returns {CellData|null}
   */
  cellAt(row, column) {
    const mine = this.overlayAt(row, column);
    const server = this.serverCellAt(row, column);
    if (mine) return {value: mine.value, format: mine.format ?? server?.format ?? '', cached: null};
    return server;
  }

  /**
   * The last row and column of the cells loaded or being edited (tiles and the user's own
   * values), for computations that stop at the data's edge.
   */
  loadedExtent() {
    let lastRow = 0;
    let lastColumn = 0;
    for (const [key, tile] of [...this.tiles, ...this.stale]) {
      if (tile.state !== 'ready') continue;
      const [tr, tc] = key.split(':').map(Number);
      lastRow = Math.max(lastRow, (tr + 1) * TILE_ROWS);
      lastColumn = Math.max(lastColumn, (tc + 1) * TILE_COLUMNS);
    }
    for (const key of this.overlay.keys()) {
      const [row, column] = key.split(':').map(Number);
      lastRow = Math.max(lastRow, row);
      lastColumn = Math.max(lastColumn, column);
    }
    return {lastRow, lastColumn};
  }

  /**
   * The user's value at (row, column), if it is still to be shown: a saved one only
   * until the grid has read the cell at the seq it was saved at.
   * @param {number} row
   * @param {number} column
   * @returns {OverlayCell|null}
   */
  overlayAt(row, column) {
    const key = `${row}:${column}`;
    const mine = this.overlay.get(key);
    if (!mine) return null;
    if (mine.state === 'saved') {
      const at = this.seqAt(row, column);
      if (at !== null && mine.seq !== undefined && at >= mine.seq) {
        this.overlay.delete(key);
        this.version++;
        return null;
      }
    }
    return mine;
  }

  /**
   * The seq the loaded value of (row, column) was read at (the tile's at_seq), or null.
   * @param {number} row
   * @param {number} column
   */
  seqAt(row, column) {
    const tile = this.tileOf(row, column);
    return tile?.data?.at_seq ?? null;
  }

  /**
   * The oldest seq any loaded cell of `rect` was read at (null if one is not loaded).
   * @param {Rect} rect
   */
  seqOfRect(rect) {
    let seq = null;
    for (let tr = Math.floor((rect.firstRow - 1) / TILE_ROWS);
      tr <= Math.floor((rect.lastRow - 1) / TILE_ROWS); tr++) {
      for (let tc = Math.floor((rect.firstColumn - 1) / TILE_COLUMNS);
        tc <= Math.floor((rect.lastColumn - 1) / TILE_COLUMNS); tc++) {
        const at = this.seqAt(tr * TILE_ROWS + 1, tc * TILE_COLUMNS + 1);
        if (at === null) return null;
        seq = seq === null ? at : Math.min(seq, at);
      }
    }
    return seq;
  }

  /**
   * Shows the user's `value` at (row, column) in `state` ('pending', 'failed',
   * 'conflict') until clearOverlay: what was typed never disappears.
   * @param {number} row
   * @param {number} column
   * @param {any} value
   * @param {string} state
   * @param {string} [title]
   * @param {number} [seq] for 'saved': the seq it was saved at
   */
  setOverlay(row, column, value, state, title, seq) {
    // The format the edit gives the cell (setOverlayFormat) stays while its value does.
    const before = this.overlay.get(`${row}:${column}`);
    const format = before && before.value === value ? before.format : undefined;
    this.overlay.set(`${row}:${column}`, {value, state, title, seq, format});
    this.version++;
    this.queueRender();
    if (row === this.active.row && column === this.active.column) {
      this.onActiveChange(row, column, this.cellAt(row, column));
    }
  }

  /**
   * The number format the user's value on its way gives the cell ("5%" typed: "0%"), so
   * that it shows as it will once saved.
   * @param {number} row
   * @param {number} column
   * @param {string} format
   */
  setOverlayFormat(row, column, format) {
    const mine = this.overlay.get(`${row}:${column}`);
    if (!mine) return;
    mine.format = format;
    this.version++;
    this.queueRender();
  }

  /**
   * @param {number} row
   * @param {number} column
   */
  clearOverlay(row, column) {
    if (this.overlay.delete(`${row}:${column}`)) {
      this.version++;
      this.queueRender();
    }
  }

  /** The selection as a rectangle. @returns {Rect} */
  selection() {
    return {
      firstRow: Math.min(this.anchor.row, this.active.row),
      lastRow: Math.max(this.anchor.row, this.active.row),
      firstColumn: Math.min(this.anchor.column, this.active.column),
      lastColumn: Math.max(this.anchor.column, this.active.column),
    };
  }

  /**
   * Moves the active cell; without `extend` the selection collapses onto it.
   * @param {number} row
   * @param {number} column
   * @param {{scroll?: boolean, extend?: boolean}} [options]
   */
  setActive(row, column, {scroll = true, extend = false} = {}) {
    row = Math.min(Math.max(row, 1), GRID_ROWS);
    column = Math.min(Math.max(column, 1), GRID_COLUMNS);
    this.edgeToken++;  // a Ctrl+arrow still looking for its edge is overtaken
    this.tabStart = null;  // a run of Tabs ends with any other move (commitEditing)
    this.active = {row, column};
    if (!extend) this.anchor = {row, column};
    if (scroll) this.scrollIntoView(row, column);
    // At once, not on the next frame: assistive technology (aria-activedescendant) and
    // the next key press see the new active cell immediately.
    this.render();
    const cell = this.cellAt(row, column);
    this.input.setAttribute('aria-label',
                            `Cell ${cellRef(row, column)}${cell && cell.value !== null ? `: ${displayValue(cell.value)}` : ''}`);
    this.onActiveChange(row, column, cell);
  }

  // --- layout and scrolling ---

  layout() {
    const width = this.scroller.clientWidth;
    const height = this.scroller.clientHeight;
    if (width === this.viewWidth && height === this.viewHeight) return;
    this.viewWidth = width;
    this.viewHeight = height;
    this.pane.style.width = `${width}px`;
    this.pane.style.height = `${height}px`;
    const rows = Math.max(1, Math.ceil((height - HEADER_HEIGHT) / ROW_HEIGHT) + 1);
    const narrowest = Math.min(COLUMN_WIDTH, ...this.widths.values());
    const columns = Math.max(1, Math.ceil((width - ROW_HEADER_WIDTH) / narrowest) + 1);
    this.buildPool(rows, columns);
    this.render();
  }

  /**
   * @param {number} rows
   * @param {number} columns
   */
  buildPool(rows, columns) {
    this.poolRows = rows;
    this.poolColumns = columns;
    this.headerCells.replaceChildren();
    this.columnHeads = [];
    for (let j = 0; j < columns; j++) {
      const head = el('div.grid-column-head', {role: 'columnheader'});
      this.columnHeads.push(head);
      this.headerCells.append(head);
    }
    this.body.replaceChildren();
    this.rows = [];
    const makeRow = (/** @type {string} */ idPrefix) => {
      const node = el('div.grid-row', {role: 'row'});
      const head = el('div.grid-row-head', {role: 'rowheader'});
      const cellsNode = el('div.grid-row-cells', {role: 'presentation'});
      const cells = [];
      for (let j = 0; j < columns; j++) {
        const cell = el('div.grid-cell', {role: 'gridcell', id: `${idPrefix}-${j}`});
        cells.push(cell);
        cellsNode.append(cell);
      }
      node.append(cellsNode, head);
      return {node, head, cellsNode, cells};
    };
    for (let i = 0; i < rows; i++) {
      const line = makeRow(`grid-cell-${i}`);
      line.node.style.top = `${HEADER_HEIGHT + i * ROW_HEIGHT}px`;
      this.rows.push(line);
      this.body.append(line.node);
    }
    this.frozenLine = makeRow('grid-frozen-cell');
    this.frozenLine.node.style.top = `${HEADER_HEIGHT}px`;
    this.frozen.replaceChildren(this.frozenLine.node);
  }

  // The scroll position in grid pixels (before proportional mapping).
  scrollPosition() {
    const physical = this.scroller.scrollTop;
    const maxPhysical = this.physicalHeight - this.viewHeight;
    const maxVirtual = this.virtualHeight - this.viewHeight;
    let top = physical;
    if (this.requestedScroll && Math.abs(this.requestedScroll.physical - physical) < 1) {
      top = this.requestedScroll.virtual;
    } else if (maxPhysical > 0 && maxVirtual !== maxPhysical) {
      top = Math.round(physical * (maxVirtual / maxPhysical));
      this.requestedScroll = null;
    }
    return {top: Math.max(0, Math.min(top, maxVirtual)), left: this.scroller.scrollLeft};
  }

  /**
   * @param {number} top
   * @param {number} [left]
   */
  scrollToVirtual(top, left) {
    const maxPhysical = this.physicalHeight - this.viewHeight;
    const maxVirtual = this.virtualHeight - this.viewHeight;
    top = Math.max(0, Math.min(top, maxVirtual));
    const physical = maxVirtual > maxPhysical && maxVirtual > 0
      ? Math.round(top * (maxPhysical / maxVirtual))
      : top;
    this.scroller.scrollTop = physical;
    // The browser may round the position; remember what we meant by it.
    this.requestedScroll = {physical: this.scroller.scrollTop, virtual: top};
    if (left !== undefined) this.scroller.scrollLeft = left;
    this.queueRender();
  }

  /** Scrolls so that row `row` is the first one shown (used by "go to" and tests). */
  scrollToRow(row) {
    this.scrollToVirtual((row - 1) * ROW_HEIGHT, this.scroller.scrollLeft);
  }

  /**
   * @param {number} row
   * @param {number} column
   */
  scrollIntoView(row, column) {
    const {top, left} = this.scrollPosition();
    const frozen = row > this.frozenRows ? this.frozenRows * ROW_HEIGHT : 0;
    const bodyHeight = this.viewHeight - HEADER_HEIGHT;
    const bodyWidth = this.viewWidth - ROW_HEADER_WIDTH;
    const rowTop = (row - 1) * ROW_HEIGHT;
    const columnLeft = this.columnLeft(column);
    const columnWidth = this.columnWidth(column);
    let newTop = top;
    let newLeft = left;
    if (row <= this.frozenRows) {
      // always in view
    } else if (rowTop < top + frozen) {
      newTop = rowTop - frozen;
    } else if (rowTop + ROW_HEIGHT > top + bodyHeight) {
      newTop = rowTop + ROW_HEIGHT - bodyHeight;
    }
    if (columnLeft < left) newLeft = columnLeft;
    else if (columnLeft + columnWidth > left + bodyWidth) {
      newLeft = Math.min(columnLeft, columnLeft + columnWidth - bodyWidth);
    }
    if (newTop !== top || newLeft !== left) this.scrollToVirtual(newTop, newLeft);
  }

  queueRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(() => {
      this.renderQueued = false;
      this.render();
    });
  }

  // --- rendering ---

  render() {
    if (!this.rows.length) return;
    const {top, left} = this.scrollPosition();
    if (top !== this.lastTop) this.scrollDirection = top > this.lastTop ? 1 : -1;
    this.lastTop = top;
    const firstRow = Math.floor(top / ROW_HEIGHT) + 1;
    const firstColumn = this.columnAt(left);
    const firstLeft = this.columnLeft(firstColumn);
    const offsetY = top % ROW_HEIGHT;
    const offsetX = left - firstLeft;
    /** @type {string[]} */
    const lefts = [];
    /** @type {string[]} */
    const widths = [];
    for (let j = 0; j < this.poolColumns; j++) {
      lefts.push(`${this.columnLeft(firstColumn + j) - firstLeft}px`);
      widths.push(`${this.columnWidth(firstColumn + j)}px`);
    }
    this.firstRow = firstRow;
    this.firstColumn = firstColumn;
    this.body.style.transform = `translateY(${-offsetY}px)`;
    this.headerCells.style.transform = `translateX(${-offsetX}px)`;
    const now = performance.now();
    const selection = this.selection();
    let activeId = null;

    for (let j = 0; j < this.poolColumns; j++) {
      const column = firstColumn + j;
      const head = this.columnHeads[j];
      const visible = column <= GRID_COLUMNS;
      head.textContent = visible ? columnName(column) : '';
      if (head.style.left !== lefts[j]) head.style.left = lefts[j];
      if (head.style.width !== widths[j]) head.style.width = widths[j];
      head.dataset.column = visible ? String(column) : '';
      head.setAttribute('aria-colindex', String(column + 1));
      head.classList.toggle('grid-active-head',
                            column >= selection.firstColumn && column <= selection.lastColumn);
    }
    const lines = this.frozenRows > 0 && this.frozenLine
      ? [[this.frozenLine, 1], ...this.rows.map((line, i) => [line, firstRow + i])]
      : this.rows.map((line, i) => [line, firstRow + i]);
    for (const [lineAny, rowAny] of lines) {
      const line = /** @type {typeof this.rows[0]} */ (lineAny);
      const row = /** @type {number} */ (rowAny);
      const visibleRow = row <= GRID_ROWS;
      const isFrozenCopy = line === this.frozenLine;
      line.node.setAttribute('aria-rowindex', String(row + 1));
      if (!isFrozenCopy) line.node.setAttribute('aria-hidden', String(row <= this.frozenRows && top > 0));
      line.node.hidden = !visibleRow;
      line.head.textContent = visibleRow ? String(row) : '';
      line.head.setAttribute('aria-colindex', '1');
      line.head.classList.toggle('grid-active-head',
                                 row >= selection.firstRow && row <= selection.lastRow);
      line.cellsNode.style.transform = `translateX(${-offsetX}px)`;
      for (let j = 0; j < this.poolColumns; j++) {
        const column = firstColumn + j;
        const node = line.cells[j];
        if (node.style.left !== lefts[j]) node.style.left = lefts[j];
        if (node.style.width !== widths[j]) node.style.width = widths[j];
        this.renderCell(node, row, column, now, selection, isFrozenCopy);
        if (row === this.active.row && column === this.active.column &&
            (isFrozenCopy || !(row <= this.frozenRows && top > 0)) && activeId === null) {
          activeId = node.id;
        }
      }
    }
    if (this.frozenLine) this.frozenLine.cellsNode.style.transform = `translateX(${-offsetX}px)`;
    if (activeId) this.root.setAttribute('aria-activedescendant', activeId);
    else this.root.removeAttribute('aria-activedescendant');
    this.positionInput();
    this.requestTiles(firstRow, firstColumn);
  }

  /**
   * @param {HTMLElement} node
   * @param {number} row
   * @param {number} column
   * @param {number} now
   * @param {Rect} selection
   * @param {boolean} frozenCopy
   */
  renderCell(node, row, column, now, selection, frozenCopy) {
    const ref = column <= GRID_COLUMNS ? cellRef(row, column) : '';
    // The frozen copy of row 1 carries its ref under another name: tests and the mouse
    // find a cell by data-ref once.
    if (frozenCopy) {
      if (node.dataset.frozenRef !== ref) node.dataset.frozenRef = ref;
    } else if (node.dataset.ref !== ref) {
      node.dataset.ref = ref;
    }
    node.setAttribute('aria-colindex', String(column + 1));
    const mine = this.overlayAt(row, column);
    const cell = this.cellAt(row, column);
    let text = '';
    let kind = 'empty';
    let title = '';
    if (cell) {
      const {value, format, cached} = cell;
      if (typeof value === 'string' && value.startsWith('=')) {
        kind = 'formula';
        const computed = this.evaluate ? this.evaluate(row, column) : undefined;
        const result = computed !== undefined ? computed : cached;
        if (result !== null && typeof result === 'object' && typeof result.error === 'string') {
          kind = 'formula-error';
          text = result.error;
          title = `${value} → ${result.error === '#CYCLE!' ? 'circular reference' : result.error}`;
        } else {
          if (typeof result === 'string') kind = 'formula-text';
          text = result !== null ? formatCell(result, format) : (this.evaluate ? '' : value);
          title = `${value} → ${displayValue(result)}`;
        }
      } else if (value !== null && typeof value === 'object') {
        kind = 'error';
        text = String(value.value ?? '');
      } else if (value !== null) {
        kind = typeof value;
        text = formatCell(value, format);
      }
    }
    if (mine?.title) title = mine.title;
    if (node.textContent !== text) node.textContent = text;
    if (node.title !== title) node.title = title;
    const active = row === this.active.row && column === this.active.column;
    const selected = row >= selection.firstRow && row <= selection.lastRow &&
                     column >= selection.firstColumn && column <= selection.lastColumn;
    const flashEnd = this.flashes.get(`${row}:${column}`);
    const flashing = flashEnd !== undefined && flashEnd > now;
    if (flashEnd !== undefined && !flashing && !frozenCopy) this.flashes.delete(`${row}:${column}`);
    const full = `grid-cell grid-${kind}${cell ? '' : ' grid-loading'}` +
                 (active ? ' grid-active' : '') +
                 (selected && !active ? ' grid-selected' : '') +
                 (mine ? ` grid-${mine.state}` : '') +
                 (flashing ? ' grid-flash' : '') +
                 (this.found && this.found.row === row && this.found.column === column ? ' grid-found' : '');
    if (node.className !== full) node.className = full;
    node.setAttribute('aria-selected', String(selected));
  }

  // --- data ---

  /**
   * The tiles in view first, then the ring around them (the next tile row in the
   * direction of scrolling first): loaded ahead, they are there when scrolled to.
   * @param {number} firstRow
   * @param {number} firstColumn
   */
  requestTiles(firstRow, firstColumn) {
    const lastRow = Math.min(GRID_ROWS, firstRow + this.poolRows);
    const lastColumn = Math.min(GRID_COLUMNS, firstColumn + this.poolColumns);
    const tr0 = Math.floor((firstRow - 1) / TILE_ROWS);
    const tr1 = Math.floor((lastRow - 1) / TILE_ROWS);
    const tc0 = Math.floor((firstColumn - 1) / TILE_COLUMNS);
    const tc1 = Math.floor((lastColumn - 1) / TILE_COLUMNS);
    const maxTr = Math.floor((GRID_ROWS - 1) / TILE_ROWS);
    const maxTc = Math.floor((GRID_COLUMNS - 1) / TILE_COLUMNS);
    /** @type {[number, number][]} */
    const wanted = [];
    const want = (/** @type {number} */ tr, /** @type {number} */ tc) => {
      if (tr < 0 || tc < 0 || tr > maxTr || tc > maxTc) return;
      if (!this.tiles.has(tileKey(tr, tc))) wanted.push([tr, tc]);
    };
    if (this.frozenRows > 0) {
      for (let tc = tc0; tc <= tc1; tc++) want(0, tc);
    }
    for (let tr = tr0; tr <= tr1; tr++) {
      for (let tc = tc0; tc <= tc1; tc++) want(tr, tc);
    }
    const ahead = this.scrollDirection > 0 ? [tr1 + 1, tr0 - 1] : [tr0 - 1, tr1 + 1];
    for (const tr of ahead) {
      for (let tc = tc0; tc <= tc1; tc++) want(tr, tc);
    }
    for (let tr = tr0; tr <= tr1; tr++) {
      want(tr, tc1 + 1);
      want(tr, tc0 - 1);
    }
    this.wanted = wanted;
    this.pumpLoads();
  }

  pumpLoads() {
    while (this.loading < MAX_CONCURRENT_LOADS && this.wanted.length > 0) {
      const [tr, tc] = /** @type {[number, number]} */ (this.wanted.shift());
      const key = tileKey(tr, tc);
      if (this.tiles.has(key)) continue;
      const generation = this.generation;
      const abort = new AbortController();
      /** @type {Tile} */
      const tile = {state: 'loading', abort};
      this.tiles.set(key, tile);
      this.loading++;
      const firstRow = tr * TILE_ROWS + 1;
      const firstColumn = tc * TILE_COLUMNS + 1;
      const range = rangeRef(firstRow, firstColumn,
                             Math.min(GRID_ROWS, firstRow + TILE_ROWS - 1),
                             Math.min(GRID_COLUMNS, firstColumn + TILE_COLUMNS - 1));
      this.loadTile(range, abort.signal)
        .then((data) => {
          if (generation !== this.generation) return;
          tile.state = 'ready';
          tile.data = data;
          this.version++;
          this.stale.delete(key);
          this.evictTiles();
          this.queueRender();
          if (this.active.row >= firstRow && this.active.row < firstRow + TILE_ROWS &&
              this.active.column >= firstColumn &&
              this.active.column < firstColumn + TILE_COLUMNS) {
            this.onActiveChange(this.active.row, this.active.column,
                                this.cellAt(this.active.row, this.active.column));
          }
        })
        .catch(() => {
          // Dropped: the next render asks again (e.g. after a transient error).
          if (generation === this.generation && this.tiles.get(key) === tile) {
            this.tiles.delete(key);
          }
        })
        .finally(() => {
          this.loading--;
          this.pumpLoads();
        });
    }
  }

  evictTiles() {
    if (this.tiles.size <= MAX_TILES) return;
    // Far tiles first: the ones nearest the view are the likeliest to be needed again.
    const centerRow = Math.floor((this.firstRow - 1) / TILE_ROWS);
    const centerColumn = Math.floor((this.firstColumn - 1) / TILE_COLUMNS);
    const keys = [...this.tiles.entries()]
      .filter(([key, tile]) => tile.state === 'ready' && key !== tileKey(0, 0))
      .map(([key]) => {
        const [tr, tc] = key.split(':').map(Number);
        return /** @type {[string, number]} */ ([key, Math.abs(tr - centerRow) + Math.abs(tc - centerColumn)]);
      })
      .sort((a, b) => b[1] - a[1]);
    for (const [key] of keys.slice(0, this.tiles.size - MAX_TILES)) this.tiles.delete(key);
  }

  /**
   * Values of `range` for reading (copy, data edges): from the server.
   * @param {Rect} rect
   * @returns {Promise<any[][]>}
   */
  async readRect(rect) {
    const data = await this.loadTile(rangeRef(rect.firstRow, rect.firstColumn, rect.lastRow,
                                              rect.lastColumn));
    return data.rows;
  }

  // --- input ---

  /**
   * The cell a mouse event is on, from the cell's own reference (not from the last
   * render's scroll position, which a scroll may have overtaken).
   * @param {Event} event
   * @returns {{row: number, column: number}|null}
   */
  cellFromEvent(event) {
    const cell = /** @type {HTMLElement|null} */ (
      /** @type {HTMLElement} */ (event.target).closest('.grid-cell'));
    const ref = cell && (cell.dataset.frozenRef || cell.dataset.ref);
    if (!ref) return null;
    const match = /^([A-Z]+)(\d+)$/.exec(ref);
    if (!match) return null;
    let column = 0;
    for (const ch of match[1]) column = column * 26 + ch.charCodeAt(0) - 64;
    return {row: Number(match[2]), column};
  }

  /** @param {MouseEvent} event */
  onMouseDown(event) {
    const ref = this.cellFromEvent(event);
    if (!ref || event.button !== 0) return;
    if (this.editing) this.commitEditing(null);
    event.preventDefault();
    this.focus();
    this.dragging = true;
    this.setActive(ref.row, ref.column, {scroll: false, extend: event.shiftKey});
  }

  /** @param {MouseEvent} event */
  onMouseMove(event) {
    if (!this.dragging || !(event.buttons & 1)) return;
    const ref = this.cellFromEvent(event);
    if (!ref || (ref.row === this.active.row && ref.column === this.active.column)) return;
    // Extends the selection from the anchor; the anchor stays where the drag began.
    const anchor = this.anchor;
    this.setActive(ref.row, ref.column, {scroll: false, extend: true});
    this.anchor = anchor;
    this.render();
  }

  /** @param {KeyboardEvent} event */
  onKeyDown(event) {
    if (event.isComposing || event.key === 'Process' || event.key === 'Dead') return;
    if (this.editing) {
      this.onEditorKey(event);
      return;
    }
    const {row, column} = this.active;
    const pageRows = Math.max(1, this.poolRows - 2);
    /** @type {Record<string, [number, number]>} */
    const moves = {
      ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
      PageUp: [-pageRows, 0], PageDown: [pageRows, 0],
    };
    const ctrl = event.ctrlKey || event.metaKey;
    const history = historyKey(event);
    if (history === 'undo') {
      this.onUndo();
    } else if (history === 'redo') {
      this.onRedo();
    } else if (this.readOnly && !ctrl && !event.altKey && event.key.length === 1) {
      this.onReadOnly();  // a character typed: nothing is edited here
      return;
    } else if (moves[event.key]) {
      const [dr, dc] = moves[event.key];
      if (ctrl && event.key.startsWith('Arrow')) {
        this.moveToEdge(dr, dc, event.shiftKey);
      } else {
        this.setActive(row + dr, column + dc, {extend: event.shiftKey});
      }
    } else if (event.key === 'Home') {
      this.setActive(ctrl ? 1 : row, 1, {extend: event.shiftKey});
    } else if (event.key === 'End' && ctrl) {
      this.moveToLastUsed(event.shiftKey);
    } else if (event.key === 'Enter' || event.key === 'F2') {
      this.startEditing('edit');
    } else if (event.key === 'Delete' || event.key === 'Backspace') {
      this.clearSelection();
    } else if (event.key === 'Escape') {
      const s = this.selection();
      if (s.firstRow !== s.lastRow || s.firstColumn !== s.lastColumn) {
        this.setActive(row, column);
      } else {
        this.onLeave();
      }
    } else if (event.key === 'Tab') {
      return;  // leaves the grid (the browser moves focus on)
    } else {
      return;  // text, copy, paste: the input's own events
    }
    event.preventDefault();
  }

  /** @param {KeyboardEvent} event */
  onEditorKey(event) {
    const editing = /** @type {NonNullable<typeof this.editing>} */ (this.editing);
    const history = historyKey(event);
    if (history) {
      event.preventDefault();
      if (history === 'undo') this.undoTyping();
      return;
    }
    /** @type {[number, number]|null} */
    let move = null;
    if (event.key === 'Enter') move = event.shiftKey ? [-1, 0] : [1, 0];
    else if (event.key === 'Tab') move = event.shiftKey ? [0, -1] : [0, 1];
    else if (editing.kind === 'enter' && event.key.startsWith('Arrow')) {
      move = /** @type {Record<string, [number, number]>} */ ({
        ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
      })[event.key] || null;
    }
    if (move) {
      event.preventDefault();
      this.commitEditing(move);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.cancelEditing();
    }
  }

  // The input's own undo and redo (a menu's Undo, the context menu's) never act: outside
  // an edit they are the grid's undo and redo, in an edit Undo takes back the typing.
  /** @param {InputEvent} event */
  onBeforeInput(event) {
    const type = event.inputType || '';
    if (type !== 'historyUndo' && type !== 'historyRedo') return;
    event.preventDefault();
    if (this.editing) {
      if (type === 'historyUndo') this.undoTyping();
    } else if (type === 'historyUndo') {
      this.onUndo();
    } else {
      this.onRedo();
    }
  }

  // Text arrived in the input outside an edit (a key, IME, a dead key, inserted text).
  /** @param {InputEvent} [event] */
  onInput(event) {
    const type = event?.inputType || '';
    if (type.startsWith('history')) {
      // An undo the browser did anyway (execCommand): it is no typing.
      if (!this.editing) this.input.value = '';
      else if (this.editing.kind === 'enter' && this.input.value === '') this.cancelEditing();
      return;
    }
    if (this.editing) return;
    if (this.readOnly) {
      this.input.value = '';
      this.onReadOnly();
      return;
    }
    // Nothing typed (an input event that removed text): no edit starts.
    if (this.input.value === '') return;
    this.beginTypedEdit();
  }

  // Ctrl+Z in an edit: the content the edit began with, or, when that is what it holds
  // (or the edit began by typing over the cell), no edit at all.
  undoTyping() {
    const editing = this.editing;
    if (!editing) return;
    if (editing.kind === 'edit' && this.input.value !== editing.original) {
      this.input.value = editing.original;
      this.input.setSelectionRange(this.input.value.length, this.input.value.length);
    } else {
      this.cancelEditing();
    }
  }

  // An edit that starts with what is typed (the input already holds it).
  beginTypedEdit() {
    if (this.editing || this.readOnly) return;
    const {row, column} = this.active;
    this.anchor = {row, column};
    this.editing = {row, column, kind: 'enter', baseSeq: this.seqAt(row, column), original: ''};
    this.showEditor();
  }

  /**
   * Opens the editor on the active cell with its content (Enter, F2, double click).
   * @param {'edit'} kind
   */
  startEditing(kind) {
    if (this.readOnly) this.onReadOnly();
    if (this.readOnly || this.editing) return;
    const {row, column} = this.active;
    this.scrollIntoView(row, column);
    const cell = this.cellAt(row, column);
    if (!cell) {
      // Not loaded yet: read it first, so the editor never starts from a blank that
      // would overwrite the cell.
      const token = ++this.edgeToken;
      this.loadTile(rangeRef(row, column, row, column)).then((data) => {
        if (token !== this.edgeToken || this.editing) return;
        this.openEditor(kind, data.rows[0]?.[0] ?? null, data.at_seq ?? null, data.formats?.[0]?.[0] || '');
      }).catch(() => {});
      return;
    }
    this.openEditor(kind, cell.value, this.seqAt(row, column), cell.format);
  }

  /**
   * @param {'edit'} kind
   * @param {any} value the cell's content
   * @param {number|null} baseSeq the seq it was read at
   * @param {string} [format] its number format (a percentage edits as "5%")
   */
  openEditor(kind, value, baseSeq, format = '') {
    const {row, column} = this.active;
    this.input.value = editText(value, format, navigator.language);
    this.editing = {row, column, kind, baseSeq, original: this.input.value};
    this.showEditor();
    this.input.setSelectionRange(this.input.value.length, this.input.value.length);
  }

  showEditor() {
    const editing = /** @type {NonNullable<typeof this.editing>} */ (this.editing);
    this.input.classList.add('grid-editing');
    this.input.setAttribute('aria-label', `Edit ${cellRef(editing.row, editing.column)}`);
    this.positionInput();
    this.focus();
  }

  positionInput() {
    const {row, column} = this.editing || this.active;
    const {top, left} = this.scrollPosition();
    const frozen = row <= this.frozenRows;
    const y = HEADER_HEIGHT + (row - 1) * ROW_HEIGHT - (frozen ? 0 : top);
    const x = ROW_HEADER_WIDTH + this.columnLeft(column) - left;
    this.input.style.transform = `translate(${x}px, ${y}px)`;
    const width = `${this.columnWidth(column)}px`;
    // The editor is never narrower than a default column (a narrow column's content
    // still fits while it is typed).
    const minWidth = `${Math.max(this.columnWidth(column), COLUMN_WIDTH)}px`;
    if (this.input.style.width !== width) this.input.style.width = width;
    if (this.input.style.minWidth !== minWidth) this.input.style.minWidth = minWidth;
  }

  closeEditor() {
    this.editing = null;
    this.input.value = '';
    this.input.classList.remove('grid-editing');
    this.input.setAttribute('aria-label', `Cell ${cellRef(this.active.row, this.active.column)}`);
  }

  cancelEditing() {
    if (!this.editing) return;
    this.closeEditor();
    this.render();
  }

  /**
   * Ends the edit and moves by `move`. A Tab (a move to the right) starts or continues a
   * run; Enter after a run goes down to the column the run started in, as spreadsheets
   * do when a row is typed in.
   * @param {[number, number]|null} move
   */
  commitEditing(move) {
    if (!this.editing) return;
    const {row, column, baseSeq} = this.editing;
    const text = this.input.value;
    this.closeEditor();
    this.onCommit({row, column, text, baseSeq});
    const tabStart = this.tabStart;
    if (move && move[0] === 0 && move[1] === 1) {
      this.setActive(row, column + 1);
      this.tabStart = tabStart ?? column;
    } else if (move && move[0] === 1 && move[1] === 0 && tabStart !== null) {
      this.setActive(row + 1, tabStart);
    } else if (move) {
      this.setActive(row + move[0], column + move[1]);
    } else {
      this.render();
    }
  }

  clearSelection() {
    if (this.readOnly) {
      this.onReadOnly();
      return;
    }
    const rect = this.selection();
    this.onClear({rect, baseSeq: this.seqOfRect(rect)});
  }

  // --- the data edge, the last used cell ---

  /**
   * Ctrl+arrow: to the edge of the data along the row or column (dataEdge), reading the
   * cells from the server in chunks up to the used extent.
   * @param {number} dr
   * @param {number} dc
   * @param {boolean} extend
   */
  async moveToEdge(dr, dc, extend) {
    const token = ++this.edgeToken;
    const {row, column} = this.active;
    let used;
    try {
      used = await this.usedRange();
    } catch {
      return;
    }
    if (token !== this.edgeToken) return;
    const vertical = dr !== 0;
    const step = vertical ? dr : dc;
    const from = vertical ? row : column;
    const extent = vertical ? used.lastRow : used.lastColumn;
    const gridEnd = step > 0 ? (vertical ? GRID_ROWS : GRID_COLUMNS) : 1;
    const end = step > 0 ? Math.max(extent, from) : 1;
    // Read the positions between `from` and `end` up to the used extent: past it every
    // position is empty, known without a read.
    /** @type {Map<number, boolean>} */
    const filled = new Map();
    const lo = Math.min(from, end);
    const hi = Math.min(Math.max(from, end), extent);
    try {
      for (let first = lo; first <= hi; first += EDGE_CHUNK) {
        const last = Math.min(hi, first + EDGE_CHUNK - 1);
        const rows = await this.readRect(vertical
          ? {firstRow: first, lastRow: last, firstColumn: column, lastColumn: column}
          : {firstRow: row, lastRow: row, firstColumn: first, lastColumn: last});
        if (token !== this.edgeToken) return;
        for (let i = first; i <= last; i++) {
          const value = vertical ? rows[i - first]?.[0] : rows[0]?.[i - first];
          filled.set(i, value !== null && value !== undefined && value !== '');
        }
      }
    } catch {
      return;
    }
    const target = dataEdge(from, step, end, gridEnd, (i) => filled.get(i) === true);
    if (token !== this.edgeToken) return;
    const anchor = this.anchor;
    this.setActive(vertical ? target : row, vertical ? column : target, {extend});
    if (extend) this.anchor = anchor;
  }

  /** @param {boolean} extend */
  async moveToLastUsed(extend) {
    const token = ++this.edgeToken;
    try {
      const used = await this.usedRange();
      if (token !== this.edgeToken) return;
      const anchor = this.anchor;
      this.setActive(Math.max(1, used.lastRow), Math.max(1, used.lastColumn), {extend});
      if (extend) this.anchor = anchor;
    } catch {
      // the server is unreachable: nowhere to go
    }
  }

  // --- clipboard ---

  /** @param {ClipboardEvent} event */
  onCopy(event) {
    if (this.editing) return;
    const rect = this.selection();
    const cells = (rect.lastRow - rect.firstRow + 1) * (rect.lastColumn - rect.firstColumn + 1);
    event.preventDefault();
    if (cells > MAX_COPY_CELLS) return;
    /** @type {string[][]} */
    const rows = [];
    let complete = true;
    for (let r = rect.firstRow; r <= rect.lastRow && complete; r++) {
      const line = [];
      for (let c = rect.firstColumn; c <= rect.lastColumn; c++) {
        const cell = this.cellAt(r, c);
        if (!cell) {
          complete = false;
          break;
        }
        // As the editor shows it ("5%", a date as typed): pasted, it reads back the same.
        line.push(editText(cell.value, cell.format, navigator.language));
      }
      rows.push(line);
    }
    if (complete) {
      const text = toTsv(rows);
      event.clipboardData?.setData('text/plain', text);
      this.copied = {text, row: rect.firstRow, column: rect.firstColumn};
      return;
    }
    this.copied = null;
    // Not all loaded: read the range, then write the clipboard asynchronously.
    this.loadTile(rangeRef(rect.firstRow, rect.firstColumn, rect.lastRow, rect.lastColumn))
      .then((data) => {
        const text = toTsv(data.rows.map((line, i) => line.map((v, j) =>
          editText(v, data.formats?.[i]?.[j] || '', navigator.language))));
        this.copied = {text, row: rect.firstRow, column: rect.firstColumn};
        return navigator.clipboard.writeText(text);
      })
      .catch(() => {});
  }

  /** @param {ClipboardEvent} event */
  onPasteEvent(event) {
    if (this.editing) return;
    if (this.readOnly) {
      event.preventDefault();
      this.onReadOnly();
      return;
    }
    const text = event.clipboardData?.getData('text/plain') ?? '';
    event.preventDefault();
    if (!text) return;
    const rows = parseTsv(text);
    if (!rows.length) return;
    const {row, column} = this.active;
    const width = Math.max(...rows.map((r) => r.length));
    const rect = {firstRow: row, firstColumn: column, lastRow: row + rows.length - 1,
                  lastColumn: column + width - 1};
    // Copied here (the same text on the clipboard): formulas move with the cells.
    const copied = this.copied && this.copied.text.replace(/\r\n?/g, '\n') === text.replace(/\r\n?/g, '\n')
      ? this.copied : null;
    const shift = copied ? {rows: row - copied.row, columns: column - copied.column} : null;
    this.onPaste({row, column, rows, baseSeq: this.seqOfRect(rect), shift});
    const anchor = {row: rect.lastRow, column: rect.lastColumn};
    this.setActive(row, column);
    this.anchor = anchor;
    this.render();
  }
}
