// @ts-check
// SPDX-License-Identifier: Apache-2.0
// What entries mean to the console: a one-line description (the log, the time-travel
// banner), the cells an entry sets (highlighting), and whether an entry may have changed
// a range of cells (judging an edit's conflict per cell). Pure functions of the entry
// JSON of api.md; no DOM.
import {cellRef, columnNumber, displayValue, parseRef} from './a1.js';
import {preview} from './format.js';

/**
 * @typedef {{seq: number, type: string, body: any, created?: number,
 *            snapshot_root?: string|null, external?: {key: string}|null}} Entry
 * @typedef {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}}
 *     Rect
 */

/** Entry types that never change cells (the server's reducer skips them). */
export const CELL_TYPES = new Set(['SetCell', 'SetCells', 'SetCellValueAndFormat',
                                   'InsertRows', 'DeleteRows', 'InsertColumns',
                                   'DeleteColumns', 'Import']);

/**
 * A one-line description of an entry.
 * @param {Entry} entry
 * @returns {string}
 */
export function describeEntry(entry) {
  const b = entry.body || {};
  switch (entry.type) {
    case 'SetCell':
      return `SetCell ${b.ref} = ${preview(displayValue(b.value), 60)}` +
             (b.format ? ` (format ${b.format})` : '');
    case 'SetCells':
      if (b.cells) return `SetCells ${Object.keys(b.cells).length} cells`;
      return `SetCells ${(b.rows || []).length} rows at ${b.at || 'A1'}`;
    case 'SetCellValueAndFormat':
      return `SetCellValueAndFormat ${cellRef(b.row + 1, b.column + 1)} = ` +
             preview(displayValue(b.value), 60);
    case 'InsertRows':
      return `InsertRows ${b.count || 1} after row ${b.after}`;
    case 'DeleteRows':
      return `DeleteRows ${b.count || 1} at row ${b.at}`;
    case 'InsertColumns':
      return `InsertColumns ${b.count || 1} after column ${b.after || 0}`;
    case 'DeleteColumns':
      return `DeleteColumns ${b.count || 1} at column ${b.at}`;
    case 'Import':
      return `Import ${b.format || ''} ${b.mode || 'replace'} at ${b.at || 'A1'}`;
    case 'Snapshot':
      return entry.snapshot_root ? 'Snapshot (completed)' : 'Snapshot (not built yet)';
    default:
      if (entry.body === null && entry.external) {
        return `${entry.type} (body in ${entry.external.key})`;
      }
      return `${entry.type} ${entry.body === null ? '' : preview(entry.body, 60)}`;
  }
}

/**
 * The cells an entry sets, as {row, column}, for highlighting (at most a few hundred);
 * [] for structural entries and entries that set no cells.
 * @param {Entry} entry
 * @returns {{row: number, column: number}[]}
 */
export function cellsOf(entry) {
  const b = entry.body || {};
  if (entry.type === 'SetCell') {
    const ref = parseRef(b.ref || '');
    return ref ? [ref] : [];
  }
  if (entry.type === 'SetCellValueAndFormat') return [{row: b.row + 1, column: b.column + 1}];
  if (entry.type === 'SetCells' && b.cells) {
    return Object.keys(b.cells).map(parseRef).filter((r) => r !== null).slice(0, 500);
  }
  if (entry.type === 'SetCells' && Array.isArray(b.rows)) {
    const at = parseRef(b.at || 'A1') || {row: 1, column: 1};
    /** @type {{row: number, column: number}[]} */
    const out = [];
    b.rows.slice(0, 100).forEach((/** @type {any[]} */ r, /** @type {number} */ i) =>
      (r || []).slice(0, 50).forEach((_, j) => out.push({row: at.row + i, column: at.column + j})));
    return out;
  }
  return [];
}

/**
 * @param {Rect} rect
 * @param {number} row
 * @param {number} column
 */
function inside(rect, row, column) {
  return row >= rect.firstRow && row <= rect.lastRow && column >= rect.firstColumn &&
         column <= rect.lastColumn;
}

/** @param {any} column a column name ("C"), or 0 / a number */
function columnIndex(column) {
  if (typeof column === 'number') return column;
  if (typeof column === 'string' && /^[A-Za-z]+$/.test(column)) return columnNumber(column);
  return 0;
}

/**
 * Whether `entry` may have changed a cell of `rect` (or moved one: an insert or delete
 * above or left of it moves the cells the user meant). Entries that change no cells
 * (Snapshot, EndSegment, types the reducer skips) never do; an Import does unless it is
 * a merge placed wholly below or right of the rect; an entry whose body is not at hand
 * (kept in the blob store) is assumed to.
 * @param {Entry} entry
 * @param {Rect} rect
 * @returns {boolean}
 */
export function touches(entry, rect) {
  if (!CELL_TYPES.has(entry.type)) return false;
  const b = entry.body;
  if (b === null || typeof b !== 'object') return true;
  switch (entry.type) {
    case 'SetCell': {
      const ref = parseRef(String(b.ref || ''));
      return !ref || inside(rect, ref.row, ref.column);
    }
    case 'SetCellValueAndFormat':
      return inside(rect, Number(b.row) + 1, Number(b.column) + 1);
    case 'SetCells': {
      if (b.cells && typeof b.cells === 'object') {
        return Object.keys(b.cells).some((key) => {
          const ref = parseRef(key);
          return !ref || inside(rect, ref.row, ref.column);
        });
      }
      const at = parseRef(String(b.at || 'A1'));
      if (!at || !Array.isArray(b.rows)) return true;
      return b.rows.some((/** @type {any} */ r, /** @type {number} */ i) => {
        const row = at.row + i;
        const width = Array.isArray(r) ? r.length : 0;
        return row >= rect.firstRow && row <= rect.lastRow && width > 0 &&
               at.column <= rect.lastColumn && at.column + width - 1 >= rect.firstColumn;
      });
    }
    case 'InsertRows':
      return rect.lastRow > Number(b.after || 0);
    case 'DeleteRows':
      return rect.lastRow >= Number(b.at);
    case 'InsertColumns':
      return rect.lastColumn > columnIndex(b.after || 0);
    case 'DeleteColumns':
      return rect.lastColumn >= columnIndex(b.at);
    case 'Import': {
      if ((b.mode || 'replace') === 'replace') return true;
      const at = parseRef(String(b.at || 'A1'));
      return !at || (rect.lastRow >= at.row && rect.lastColumn >= at.column);
    }
    default:
      return true;
  }
}
