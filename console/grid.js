// A virtualised spreadsheet grid: the whole XLSX-sized sheet (1,048,576 rows, 16,384
// columns) scrolls natively, while the DOM holds only the cells in view (a pool
// reused as it scrolls) and the data comes in tiles fetched for the visible range
// only. ARIA grid semantics: role=grid/row/columnheader/rowheader/gridcell with
// aria-rowindex/aria-colindex, the active cell through aria-activedescendant.
//
// The owner supplies the data and decides what an edit means:
//   new VirtualGrid(host, {
//     loadTile(range, signal) -> Promise<{rows, formats?, cached?}>  (GET .../cells)
//     onCommit(row, column, text) -> Promise  (an edit typed by the user)
//     onActiveChange(row, column, cell)       (cell: {value, format, cached} | null)
//   })
import {cellRef, columnName, displayValue, editValue, rangeRef} from './a1.js';
import {el} from './ui.js';

export const GRID_ROWS = 1048576;
export const GRID_COLUMNS = 16384;
const ROW_HEIGHT = 24;
const COLUMN_WIDTH = 112;
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

// Excel-style number formats, the common part: decimals, thousands separators,
// percentages and ISO-like dates of a serial number. Anything else shows the value.
export function formatCell(value, format) {
  if (typeof value !== 'number' || !format) return displayValue(value);
  const fmt = format.replace(/"[^"]*"|\\./g, '');
  if (/[ymd]/i.test(fmt) && !/0/.test(fmt)) {
    const date = new Date(Math.round((value - 25569) * 86400000));
    if (Number.isNaN(date.getTime())) return displayValue(value);
    const iso = date.toISOString();
    return /h/i.test(fmt) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);
  }
  const decimals = (/\.(0+)/.exec(fmt) || ['', ''])[1].length;
  const percent = fmt.includes('%');
  const grouped = fmt.includes(',');
  const shown = percent ? value * 100 : value;
  let text = shown.toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
    useGrouping: grouped,
  });
  if (percent) text += '%';
  if (/^\$|\[\$\$/.test(fmt)) text = `$${text}`;
  return text;
}

function tileKey(tileRow, tileColumn) {
  return `${tileRow}:${tileColumn}`;
}

export class VirtualGrid {
  constructor(host, {loadTile, onCommit, onActiveChange, label = 'Sheet'}) {
    this.loadTile = loadTile;
    this.onCommit = onCommit;
    this.onActiveChange = onActiveChange || (() => {});
    this.readOnly = false;
    this.active = {row: 1, column: 1};
    this.tiles = new Map();  // key -> {state: 'loading'|'ready', data, generation}
    this.stale = new Map();  // tiles of the previous generation, shown until replaced
    this.generation = 0;
    this.loading = 0;
    this.flashes = new Map();  // "row:column" -> time the flash ends
    this.editor = null;
    this.virtualTop = 0;
    this.requestedScroll = null;  // {physical, virtual}: a position we scrolled to
    this.renderQueued = false;

    this.root = el('div.grid', {
      role: 'grid',
      tabindex: 0,
      'aria-label': label,
      'aria-rowcount': GRID_ROWS + 1,
      'aria-colcount': GRID_COLUMNS + 1,
      'aria-readonly': 'false',
    });
    this.scroller = el('div.grid-scroller', {role: 'presentation'});
    this.content = el('div.grid-content', {role: 'presentation'});
    this.pane = el('div.grid-pane', {role: 'presentation'});
    this.corner = el('div.grid-corner', {role: 'presentation'});
    this.headerRow = el('div.grid-header-row', {role: 'row', 'aria-rowindex': 1});
    this.headerCells = el('div.grid-header-cells', {role: 'presentation'});
    this.headerRow.append(el('div.grid-corner-cell', {role: 'columnheader'}, ''),
                          this.headerCells);
    this.body = el('div.grid-body', {role: 'rowgroup'});
    this.pane.append(this.body, this.headerRow, this.corner);
    this.content.append(this.pane);
    this.scroller.append(this.content);
    this.root.append(this.scroller);
    host.append(this.root);

    this.virtualHeight = HEADER_HEIGHT + GRID_ROWS * ROW_HEIGHT;
    this.contentWidth = ROW_HEADER_WIDTH + GRID_COLUMNS * COLUMN_WIDTH;
    this.physicalHeight = Math.min(this.virtualHeight, MAX_SCROLL_PIXELS);
    this.content.style.height = `${this.physicalHeight}px`;
    this.content.style.width = `${this.contentWidth}px`;

    this.scroller.addEventListener('scroll', () => this.queueRender(), {passive: true});
    this.root.addEventListener('keydown', (e) => this.onKeyDown(e));
    this.body.addEventListener('mousedown', (e) => this.onMouseDown(e));
    this.body.addEventListener('dblclick', (e) => {
      const cell = e.target.closest('[data-row]');
      if (cell) this.startEditing(null);
    });
    this.headerCells.addEventListener('mousedown', (e) => {
      const head = e.target.closest('[data-column]');
      if (!head) return;
      e.preventDefault();
      this.setActive(this.active.row, Number(head.dataset.column));
      this.root.focus();
    });
    this.resizeObserver = new ResizeObserver(() => this.layout());
    this.resizeObserver.observe(this.scroller);
  }

  destroy() {
    this.resizeObserver.disconnect();
    for (const tile of this.tiles.values()) tile.abort?.abort();
    this.root.remove();
  }

  focus() {
    this.root.focus({preventScroll: true});
  }

  setReadOnly(readOnly) {
    this.readOnly = readOnly;
    this.root.setAttribute('aria-readonly', String(readOnly));
    this.root.classList.toggle('grid-readonly', readOnly);
    if (readOnly) this.cancelEditing();
  }

  // Drops every cached tile (the sheet changed, or the seq shown did): the old values
  // stay on screen until the new ones arrive, so a refresh does not flicker.
  invalidate() {
    this.generation++;
    this.stale = new Map();
    for (const [key, tile] of this.tiles) {
      if (tile.state === 'ready') this.stale.set(key, tile);
    }
    this.tiles = new Map();
    this.queueRender();
  }

  // Highlights cells that changed (e.g. another client's append) for a moment.
  flash(refs) {
    const until = performance.now() + FLASH_MS;
    for (const {row, column} of refs) this.flashes.set(`${row}:${column}`, until);
    this.queueRender();
    setTimeout(() => this.queueRender(), FLASH_MS + 50);
  }

  // The loaded cell at (row, column): {value, format, cached}, or null if not loaded.
  cellAt(row, column) {
    const key = tileKey(Math.floor((row - 1) / TILE_ROWS),
                        Math.floor((column - 1) / TILE_COLUMNS));
    const tile = this.tiles.get(key) || this.stale.get(key);
    if (!tile || tile.state !== 'ready') return null;
    const r = (row - 1) % TILE_ROWS;
    const c = (column - 1) % TILE_COLUMNS;
    const data = tile.data;
    return {
      value: data.rows[r]?.[c] ?? null,
      format: data.formats?.[r]?.[c] || '',
      cached: data.cached?.[r]?.[c] ?? null,
    };
  }

  // Shows `value` at (row, column) now, before the server's answer to an edit.
  setLocalValue(row, column, value) {
    const key = tileKey(Math.floor((row - 1) / TILE_ROWS),
                        Math.floor((column - 1) / TILE_COLUMNS));
    const tile = this.tiles.get(key) || this.stale.get(key);
    if (!tile || tile.state !== 'ready') return;
    const r = (row - 1) % TILE_ROWS;
    const c = (column - 1) % TILE_COLUMNS;
    if (!tile.data.rows[r]) return;
    tile.data.rows[r][c] = value;
    if (tile.data.cached?.[r]) tile.data.cached[r][c] = null;
    this.queueRender();
  }

  setActive(row, column, {scroll = true} = {}) {
    row = Math.min(Math.max(row, 1), GRID_ROWS);
    column = Math.min(Math.max(column, 1), GRID_COLUMNS);
    this.active = {row, column};
    if (scroll) this.scrollIntoView(row, column);
    // At once, not on the next frame: assistive technology (aria-activedescendant) and
    // the next key press see the new active cell immediately.
    this.render();
    this.onActiveChange(row, column, this.cellAt(row, column));
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
    const columns = Math.max(1, Math.ceil((width - ROW_HEADER_WIDTH) / COLUMN_WIDTH) + 1);
    this.buildPool(rows, columns);
    this.render();
  }

  buildPool(rows, columns) {
    this.poolRows = rows;
    this.poolColumns = columns;
    this.headerCells.replaceChildren();
    this.columnHeads = [];
    for (let j = 0; j < columns; j++) {
      const head = el('div.grid-column-head', {role: 'columnheader'});
      head.style.left = `${j * COLUMN_WIDTH}px`;
      this.columnHeads.push(head);
      this.headerCells.append(head);
    }
    this.body.replaceChildren();
    this.rows = [];
    for (let i = 0; i < rows; i++) {
      const rowNode = el('div.grid-row', {role: 'row'});
      rowNode.style.top = `${HEADER_HEIGHT + i * ROW_HEIGHT}px`;
      const head = el('div.grid-row-head', {role: 'rowheader'});
      const cellsNode = el('div.grid-row-cells', {role: 'presentation'});
      const cells = [];
      for (let j = 0; j < columns; j++) {
        const cell = el('div.grid-cell', {role: 'gridcell', id: `grid-cell-${i}-${j}`});
        cell.style.left = `${j * COLUMN_WIDTH}px`;
        cells.push(cell);
        cellsNode.append(cell);
      }
      rowNode.append(cellsNode, head);
      this.rows.push({node: rowNode, head, cellsNode, cells});
      this.body.append(rowNode);
    }
    this.shownFirstRow = null;
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

  // Scrolls so that row `row` is the first one shown (used by "go to" and tests).
  scrollToRow(row) {
    this.scrollToVirtual((row - 1) * ROW_HEIGHT, this.scroller.scrollLeft);
  }

  scrollIntoView(row, column) {
    const {top, left} = this.scrollPosition();
    const bodyHeight = this.viewHeight - HEADER_HEIGHT;
    const bodyWidth = this.viewWidth - ROW_HEADER_WIDTH;
    const rowTop = (row - 1) * ROW_HEIGHT;
    const columnLeft = (column - 1) * COLUMN_WIDTH;
    let newTop = top;
    let newLeft = left;
    if (rowTop < top) newTop = rowTop;
    else if (rowTop + ROW_HEIGHT > top + bodyHeight) newTop = rowTop + ROW_HEIGHT - bodyHeight;
    if (columnLeft < left) newLeft = columnLeft;
    else if (columnLeft + COLUMN_WIDTH > left + bodyWidth) {
      newLeft = columnLeft + COLUMN_WIDTH - bodyWidth;
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
    if (!this.rows) return;
    const {top, left} = this.scrollPosition();
    const firstRow = Math.floor(top / ROW_HEIGHT) + 1;
    const firstColumn = Math.floor(left / COLUMN_WIDTH) + 1;
    const offsetY = top % ROW_HEIGHT;
    const offsetX = left % COLUMN_WIDTH;
    this.firstRow = firstRow;
    this.firstColumn = firstColumn;
    this.body.style.transform = `translateY(${-offsetY}px)`;
    this.headerCells.style.transform = `translateX(${-offsetX}px)`;
    const now = performance.now();
    let activeId = null;

    for (let j = 0; j < this.poolColumns; j++) {
      const column = firstColumn + j;
      const head = this.columnHeads[j];
      const visible = column <= GRID_COLUMNS;
      head.textContent = visible ? columnName(column) : '';
      head.dataset.column = visible ? column : '';
      head.setAttribute('aria-colindex', column + 1);
      head.classList.toggle('grid-active-head', column === this.active.column);
    }
    for (let i = 0; i < this.poolRows; i++) {
      const row = firstRow + i;
      const line = this.rows[i];
      const visibleRow = row <= GRID_ROWS;
      line.node.setAttribute('aria-rowindex', row + 1);
      line.node.hidden = !visibleRow;
      line.head.textContent = visibleRow ? row : '';
      line.head.setAttribute('aria-colindex', 1);
      line.head.classList.toggle('grid-active-head', row === this.active.row);
      line.cellsNode.style.transform = `translateX(${-offsetX}px)`;
      for (let j = 0; j < this.poolColumns; j++) {
        const column = firstColumn + j;
        const node = line.cells[j];
        this.renderCell(node, row, column, now);
        if (row === this.active.row && column === this.active.column) activeId = node.id;
      }
    }
    if (activeId) this.root.setAttribute('aria-activedescendant', activeId);
    else this.root.removeAttribute('aria-activedescendant');
    this.positionEditor();
    this.requestTiles(firstRow, firstColumn);
  }

  renderCell(node, row, column, now) {
    const ref = column <= GRID_COLUMNS ? cellRef(row, column) : '';
    if (node.dataset.ref !== ref) node.dataset.ref = ref;
    node.setAttribute('aria-colindex', column + 1);
    const cell = this.cellAt(row, column);
    let text = '';
    let kind = 'empty';
    let title = '';
    if (cell) {
      const {value, format, cached} = cell;
      if (typeof value === 'string' && value.startsWith('=')) {
        kind = 'formula';
        text = cached !== null ? formatCell(cached, format) : value;
        title = cached !== null ? `${value} → ${displayValue(cached)}` : value;
      } else if (value !== null) {
        kind = typeof value;
        text = formatCell(value, format);
      }
    }
    if (node.textContent !== text) node.textContent = text;
    if (node.title !== title) node.title = title;
    const className = `grid-cell grid-${kind}${cell ? '' : ' grid-loading'}`;
    const active = row === this.active.row && column === this.active.column;
    const flashEnd = this.flashes.get(`${row}:${column}`);
    const flashing = flashEnd !== undefined && flashEnd > now;
    if (flashEnd !== undefined && !flashing) this.flashes.delete(`${row}:${column}`);
    const full = className + (active ? ' grid-active' : '') + (flashing ? ' grid-flash' : '');
    if (node.className !== full) node.className = full;
    node.setAttribute('aria-selected', String(active));
  }

  // --- data ---

  requestTiles(firstRow, firstColumn) {
    const lastRow = Math.min(GRID_ROWS, firstRow + this.poolRows);
    const lastColumn = Math.min(GRID_COLUMNS, firstColumn + this.poolColumns);
    this.wanted = [];
    for (let tr = Math.floor((firstRow - 1) / TILE_ROWS);
         tr <= Math.floor((lastRow - 1) / TILE_ROWS); tr++) {
      for (let tc = Math.floor((firstColumn - 1) / TILE_COLUMNS);
           tc <= Math.floor((lastColumn - 1) / TILE_COLUMNS); tc++) {
        if (!this.tiles.has(tileKey(tr, tc))) this.wanted.push([tr, tc]);
      }
    }
    this.pumpLoads();
  }

  pumpLoads() {
    while (this.loading < MAX_CONCURRENT_LOADS && this.wanted.length > 0) {
      const [tr, tc] = this.wanted.shift();
      const key = tileKey(tr, tc);
      if (this.tiles.has(key)) continue;
      const generation = this.generation;
      const abort = new AbortController();
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
                     .filter(([, tile]) => tile.state === 'ready')
                     .map(([key]) => {
                       const [tr, tc] = key.split(':').map(Number);
                       return [key, Math.abs(tr - centerRow) + Math.abs(tc - centerColumn)];
                     })
                     .sort((a, b) => b[1] - a[1]);
    for (const [key] of keys.slice(0, this.tiles.size - MAX_TILES)) this.tiles.delete(key);
  }

  // --- input ---

  onMouseDown(event) {
    const cell = event.target.closest('.grid-cell');
    if (!cell || !cell.dataset.ref) return;
    const line = this.rows.findIndex((r) => r.cellsNode === cell.parentNode);
    const j = this.rows[line].cells.indexOf(cell);
    if (this.editor) this.commitEditing({move: null});
    event.preventDefault();
    this.root.focus({preventScroll: true});
    this.setActive(this.firstRow + line, this.firstColumn + j, {scroll: false});
  }

  onKeyDown(event) {
    if (this.editor) return;  // the editor handles its own keys
    const {row, column} = this.active;
    const pageRows = Math.max(1, this.poolRows - 2);
    const moves = {
      ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1],
      PageUp: [-pageRows, 0], PageDown: [pageRows, 0],
    };
    if (moves[event.key]) {
      const [dr, dc] = moves[event.key];
      const far = event.ctrlKey || event.metaKey;
      this.setActive(far && dr ? (dr < 0 ? 1 : GRID_ROWS) : row + dr,
                     far && dc ? (dc < 0 ? 1 : GRID_COLUMNS) : column + dc);
    } else if (event.key === 'Tab') {
      this.setActive(row, column + (event.shiftKey ? -1 : 1));
    } else if (event.key === 'Home') {
      this.setActive(event.ctrlKey ? 1 : row, 1);
    } else if (event.key === 'Enter' || event.key === 'F2') {
      this.startEditing(null);
    } else if (event.key === 'Delete' || event.key === 'Backspace') {
      if (!this.readOnly) this.commit(row, column, '');
    } else if (event.key.length === 1 && !event.ctrlKey && !event.metaKey && !event.altKey) {
      this.startEditing(event.key);
    } else {
      return;
    }
    event.preventDefault();
  }

  // Opens the editor on the active cell, with `initial` replacing its content (a key
  // typed) or the cell's current content (Enter, F2, double click).
  startEditing(initial) {
    if (this.readOnly) return;
    const {row, column} = this.active;
    this.scrollIntoView(row, column);
    const cell = this.cellAt(row, column);
    const input = el('input.grid-editor', {
      type: 'text',
      'aria-label': `Edit ${cellRef(row, column)}`,
      spellcheck: 'false',
      autocomplete: 'off',
    });
    input.value = initial !== null ? initial : editValue(cell ? cell.value : null);
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this.commitEditing({move: event.shiftKey ? [-1, 0] : [1, 0]});
      } else if (event.key === 'Tab') {
        event.preventDefault();
        this.commitEditing({move: event.shiftKey ? [0, -1] : [0, 1]});
      } else if (event.key === 'Escape') {
        event.preventDefault();
        this.cancelEditing();
      }
      event.stopPropagation();
    });
    input.addEventListener('blur', () => {
      if (this.editor && this.editor.input === input) this.commitEditing({move: null});
    });
    this.editor = {row, column, input};
    this.pane.append(input);
    this.positionEditor();
    input.focus({preventScroll: true});
    if (initial === null) input.select();
  }

  positionEditor() {
    if (!this.editor) return;
    const {top, left} = this.scrollPosition();
    const y = HEADER_HEIGHT + (this.editor.row - 1) * ROW_HEIGHT - top;
    const x = ROW_HEADER_WIDTH + (this.editor.column - 1) * COLUMN_WIDTH - left;
    this.editor.input.style.transform = `translate(${x}px, ${y}px)`;
  }

  cancelEditing() {
    if (!this.editor) return;
    const {input} = this.editor;
    this.editor = null;
    input.remove();
    this.focus();
  }

  commitEditing({move}) {
    if (!this.editor) return;
    const {row, column, input} = this.editor;
    const text = input.value;
    this.editor = null;
    input.remove();
    const before = this.cellAt(row, column);
    const unchanged = before && editValue(before.value) === text;
    if (!unchanged) this.commit(row, column, text);
    if (move) this.setActive(row + move[0], column + move[1]);
    this.focus();
  }

  commit(row, column, text) {
    Promise.resolve(this.onCommit(row, column, text)).catch(() => {});
  }
}
