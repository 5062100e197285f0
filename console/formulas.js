// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Formulas computed in the page, as a spreadsheet shows them: the grid shows a formula's
// value (the formula bar its text), recomputed whenever a cell changes.
//
// The engine is fast-formula-parser (MIT) with the functions it lacks (MIN, MAX, UPPER,
// MATCH, ...) from @formulajs/formulajs (MIT): vendor/formula-engine.js, built by
// scripts/vendor-console (vendor/README.md says why these). This module gives it the
// cells and keeps what it computed:
//   FormulaEvaluator  pure (cells come from a function): each formula is computed at most
//                     once until reset(), on demand (only the cells shown and what they
//                     depend on, dependencies first), errors as spreadsheets write them (#DIV/0!, #REF!,
//                     #NAME?, #VALUE!, #N/A, #NUM!; #CYCLE! for a circular reference;
//                     #ERROR! for a formula that does not parse).
//   SheetCells        the sheet's used range read from the server at the seq shown, so
//                     that a formula sees the cells it refers to wherever they are (a
//                     range of up to MAX_SHEET_CELLS; beyond it only the loaded cells).
// References to other sheets are not resolved (#REF!): a sheet is one log here.
import {FormulaError, FormulaParser, formulajs} from './vendor/formula-engine.js';

export const CYCLE = '#CYCLE!';
// The most cells (the used range's area) read for formulas; bigger sheets compute from
// the cells loaded for the view.
export const MAX_SHEET_CELLS = 250000;

/** @typedef {{error: string}} CellError */

/**
 * Whether a cell value is a formula.
 * @param {unknown} value
 * @returns {value is string}
 */
export function isFormula(value) {
  return typeof value === 'string' && value.length > 1 && value.startsWith('=');
}

/**
 * @param {unknown} value
 * @returns {value is CellError}
 */
export function isCellError(value) {
  return value !== null && typeof value === 'object' && typeof (/** @type {any} */ (value).error) === 'string';
}

/**
 * An argument as formula.js takes it: a range as its rows, an omitted one as undefined.
 * @param {{value: any, omitted?: boolean}} arg the engine's argument
 */
function plainArgument(arg) {
  if (arg === null || typeof arg !== 'object' || !('value' in arg)) return arg;
  if (arg.omitted) return undefined;
  return arg.value;
}

/**
 * The first spreadsheet error among arguments (a range's cells included), which a
 * function given it returns, as spreadsheets do.
 * @param {any[]} values
 * @returns {any}
 */
function firstError(values) {
  for (const value of values) {
    if (value instanceof FormulaError) return value;
    if (Array.isArray(value)) {
      const inner = firstError(value);
      if (inner) return inner;
    }
  }
  return null;
}

// Functions that take errors as values rather than returning the first one.
const COUNTS_ERRORS = new Set(['COUNTA', 'COUNTBLANK', 'AGGREGATE', 'ERROR.TYPE']);

/**
 * formula.js's functions that fast-formula-parser has none of, adapted to its calling
 * convention (arguments as {value, isArray, ...}; errors as FormulaError). Built once.
 * @returns {{functions: Record<string, Function>, withContext: Record<string, Function>}}
 */
function extraFunctions() {
  const probe = new FormulaParser({});
  // Its own list has stubs (MAX, MATCH, ...) that return nothing: those are not its own.
  const native = new Set(probe.supportedFunctions());
  const needContext = new Set(probe.funsNeedContext);
  /** @type {Record<string, Function>} */
  const functions = {};
  /** @type {Record<string, Function>} */
  const withContext = {};
  /**
   * @param {string} name
   * @param {Function} fn
   */
  const add = (name, fn) => {
    if (native.has(name)) return;
    const countsErrors = COUNTS_ERRORS.has(name);
    const adapted = (/** @type {any[]} */ ...args) => {
      const values = args.map(plainArgument);
      const error = countsErrors ? null : firstError(values);
      if (error) return error;
      let result = fn(...values);
      if (result instanceof Error) {
        return /^#/.test(result.message) ? new FormulaError(result.message) : FormulaError.VALUE;
      }
      if (result instanceof Date) result = dateToSerial(result);
      return result;
    };
    if (needContext.has(name)) {
      withContext[name] = (/** @type {any} */ _context, /** @type {any[]} */ ...args) => adapted(...args);
    } else {
      functions[name] = adapted;
    }
  };
  for (const [name, value] of Object.entries(formulajs)) {
    if (typeof value === 'function') add(name, value);
    if (value && typeof value === 'object') {
      for (const [part, fn] of Object.entries(value)) {
        if (typeof fn === 'function') add(`${name}.${part}`, fn);
      }
    }
  }
  return {functions, withContext};
}

/**
 * A date from formula.js as a serial day number (days since 1899-12-30, local midnight).
 * @param {Date} date
 */
function dateToSerial(date) {
  const utc = Date.UTC(date.getFullYear(), date.getMonth(), date.getDate(), date.getHours(),
                       date.getMinutes(), date.getSeconds(), date.getMilliseconds());
  return (utc - Date.UTC(1899, 11, 30)) / 86400000;
}

/** @type {ReturnType<typeof extraFunctions>|null} */
let extras = null;

/**
 * The cells and ranges a formula refers to on its own sheet, found by scanning its text
 * (no evaluation): A1 references ("$A$1" too, any case), ranges ("A1:B5") and whole
 * columns or rows ("A:A", "3:3", with `lastRow`/`lastColumn` as their end). Skipped:
 * string literals, function names, and references to other sheets ("Sheet2!A1").
 * Refs the scan cannot see (INDIRECT, OFFSET) are met during evaluation instead.
 * @param {string} formula with or without its '='
 * @param {number} lastRow
 * @param {number} lastColumn
 * @returns {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}[]}
 */
export function formulaRefs(formula, lastRow, lastColumn) {
  /** @type {{firstRow: number, firstColumn: number, lastRow: number, lastColumn: number}[]} */
  const refs = [];
  // Literals out first (kept as spaces, so positions and token boundaries stay).
  const text = formula.replace(/"(?:[^"]|"")*"?/g, (m) => ' '.repeat(m.length));
  const column = (/** @type {string} */ letters) => {
    let n = 0;
    for (const ch of letters.toUpperCase()) n = n * 26 + ch.charCodeAt(0) - 64;
    return n;
  };
  const cell = '\\$?([A-Za-z]{1,3})\\$?([0-9]+)';
  const pattern = new RegExp(
    `(^|[^A-Za-z0-9_.$!'])(?:${cell}(?::${cell})?|\\$?([A-Za-z]{1,3}):\\$?([A-Za-z]{1,3})|\\$?([0-9]+):\\$?([0-9]+))(?![A-Za-z0-9_.(!])`,
    'g');
  for (const m of text.matchAll(pattern)) {
    if (m[2] !== undefined) {
      const r1 = Number(m[3]);
      const c1 = column(m[2]);
      const r2 = m[5] !== undefined ? Number(m[5]) : r1;
      const c2 = m[4] !== undefined ? column(m[4]) : c1;
      refs.push({firstRow: Math.min(r1, r2), lastRow: Math.max(r1, r2),
                 firstColumn: Math.min(c1, c2), lastColumn: Math.max(c1, c2)});
    } else if (m[6] !== undefined) {
      const c1 = column(m[6]);
      const c2 = column(m[7]);
      refs.push({firstRow: 1, lastRow, firstColumn: Math.min(c1, c2), lastColumn: Math.max(c1, c2)});
    } else if (m[8] !== undefined) {
      const r1 = Number(m[8]);
      const r2 = Number(m[9]);
      refs.push({firstRow: Math.min(r1, r2), lastRow: Math.max(r1, r2), firstColumn: 1, lastColumn});
    }
  }
  return refs;
}

// The parser is not reentrant (a formula computed while another is being parsed needs a
// parser of its own): dependencies are computed first, so nesting is rare (references the
// scan cannot see), and bounded by this.
const MAX_NESTING = 8;

export class FormulaEvaluator {
  /**
   * @param {(row: number, column: number) => any} raw the content of a cell (a formula
   *        as its text), null when empty
   * @param {() => {lastRow: number, lastColumn: number}} [extent] the last row and column
   *        holding anything: whole columns and rows, and ranges, end there
   */
  constructor(raw, extent = () => ({lastRow: 1048576, lastColumn: 16384})) {
    this.raw = raw;
    this.extent = extent;
    /** @type {Map<string, any>} "row:column" -> computed value (CellError for errors) */
    this.memo = new Map();
    /** @type {Set<string>} the formulas being parsed (one met again is a cycle) */
    this.evaluating = new Set();
    /** @type {any[]} parsers by nesting depth */
    this.parsers = [];
    this.depth = 0;
  }

  /** Forgets every computed value (a cell changed). */
  reset() {
    this.memo.clear();
  }

  /** @param {number} depth */
  parserAt(depth) {
    if (!this.parsers[depth]) {
      extras = extras || extraFunctions();
      this.parsers[depth] = new FormulaParser({
        functions: extras.functions,
        functionsNeedContext: extras.withContext,
        onCell: (/** @type {{row: number, col: number}} */ ref) => this.operand(ref.row, ref.col),
        onRange: (/** @type {{from: {row: number, col: number}, to: {row: number, col: number}}} */ ref) => {
          // A whole column or row ends at the sheet's last used row or column.
          const {lastRow, lastColumn} = this.extent();
          const toRow = Math.min(ref.to.row, Math.max(lastRow, ref.from.row));
          const toColumn = Math.min(ref.to.col, Math.max(lastColumn, ref.from.col));
          /** @type {any[][]} */
          const rows = [];
          for (let r = ref.from.row; r <= toRow; r++) {
            const line = [];
            for (let c = ref.from.col; c <= toColumn; c++) line.push(this.operand(r, c));
            rows.push(line);
          }
          return rows;
        },
      });
    }
    return this.parsers[depth];
  }

  /**
   * The value of (row, column) as a spreadsheet shows it: a formula's result, or the
   * content itself. Errors are {error: '#DIV/0!'}.
   * @param {number} row
   * @param {number} column
   * @returns {any}
   */
  value(row, column) {
    const content = this.raw(row, column);
    if (!isFormula(content)) return content ?? null;
    const key = `${row}:${column}`;
    if (!this.memo.has(key)) this.computeWithDependencies(row, column);
    return this.memo.get(key);
  }

  /**
   * Computes the formula at (row, column) after the formulas it refers to, depth first
   * with a stack of its own (a chain thousands long needs no recursion); a formula met
   * again while its dependencies are being computed closes a cycle: every formula on it
   * is #CYCLE!.
   * @param {number} row
   * @param {number} column
   */
  computeWithDependencies(row, column) {
    const {lastRow, lastColumn} = this.extent();
    /** @type {{row: number, column: number, key: string, deps: [number, number][]|null, next: number}[]} */
    const stack = [];
    /** @type {Map<string, number>} key -> its index on the stack (the path) */
    const onPath = new Map();
    const push = (/** @type {number} */ r, /** @type {number} */ c) => {
      const key = `${r}:${c}`;
      onPath.set(key, stack.length);
      stack.push({row: r, column: c, key, deps: null, next: 0});
    };
    push(row, column);
    while (stack.length) {
      const top = stack[stack.length - 1];
      if (this.memo.has(top.key)) {  // closed a cycle meanwhile
        stack.pop();
        onPath.delete(top.key);
        continue;
      }
      if (!top.deps) top.deps = this.dependencies(top.row, top.column, lastRow, lastColumn);
      let descended = false;
      while (top.next < top.deps.length) {
        const [r, c] = top.deps[top.next++];
        const key = `${r}:${c}`;
        if (this.memo.has(key)) continue;
        const at = onPath.get(key);
        if (at !== undefined) {
          for (let i = at; i < stack.length; i++) this.memo.set(stack[i].key, {error: CYCLE});
          continue;
        }
        push(r, c);
        descended = true;
        break;
      }
      if (descended) continue;
      stack.pop();
      onPath.delete(top.key);
      if (!this.memo.has(top.key)) {
        this.memo.set(top.key, this.evaluate(/** @type {string} */ (this.raw(top.row, top.column)),
                                             top.row, top.column));
      }
    }
  }

  /**
   * The formula cells the formula at (row, column) refers to, not computed yet.
   * @param {number} row
   * @param {number} column
   * @param {number} lastRow
   * @param {number} lastColumn
   * @returns {[number, number][]}
   */
  dependencies(row, column, lastRow, lastColumn) {
    const formula = /** @type {string} */ (this.raw(row, column));
    /** @type {[number, number][]} */
    const deps = [];
    for (const ref of formulaRefs(formula, lastRow, lastColumn)) {
      const toRow = Math.min(ref.lastRow, Math.max(lastRow, ref.firstRow));
      const toColumn = Math.min(ref.lastColumn, Math.max(lastColumn, ref.firstColumn));
      for (let r = ref.firstRow; r <= toRow; r++) {
        for (let c = ref.firstColumn; c <= toColumn; c++) {
          if (!this.memo.has(`${r}:${c}`) && isFormula(this.raw(r, c))) deps.push([r, c]);
        }
      }
    }
    return deps;
  }

  /**
   * Parses and computes one formula (its dependencies computed, as far as they are known).
   * @param {string} formula with its '='
   * @param {number} row
   * @param {number} column
   */
  evaluate(formula, row, column) {
    const key = `${row}:${column}`;
    this.evaluating.add(key);
    const parser = this.parserAt(this.depth);
    this.depth++;
    try {
      return fromEngine(parser.parse(formula.slice(1), {sheet: '', row, col: column}));
    } catch (error) {
      const e = /** @type {any} */ (error);
      if (e instanceof FormulaError) {
        // An unknown function is #NAME? (as spreadsheets say); any other failure to
        // parse #ERROR!.
        const inner = e.details instanceof FormulaError ? e.details : e;
        if (/not implemented/i.test(inner.message || '')) return {error: '#NAME?'};
        if (inner.error && inner.error !== '#ERROR!') return {error: inner.error};
        return {error: '#ERROR!'};
      }
      return {error: '#ERROR!'};
    } finally {
      this.depth--;
      this.evaluating.delete(key);
    }
  }

  /**
   * A referenced cell as the engine takes it: a formula's result (computed first, or now
   * with a nested parser when the scan did not see the reference), an error as the
   * engine's error (it propagates), empty as null.
   * @param {number} row
   * @param {number} column
   */
  operand(row, column) {
    const content = this.raw(row, column);
    if (!isFormula(content)) {
      if (content !== null && typeof content === 'object') return FormulaError.VALUE;
      return content ?? null;
    }
    const key = `${row}:${column}`;
    let result;
    if (this.memo.has(key)) {
      result = this.memo.get(key);
    } else if (this.evaluating.has(key)) {
      result = {error: CYCLE};
    } else if (this.depth >= MAX_NESTING) {
      result = {error: '#REF!'};
    } else {
      result = this.evaluate(content, row, column);
      this.memo.set(key, result);
    }
    return isCellError(result) ? new FormulaError(result.error) : result;
  }
}

/**
 * A value from the engine as a cell value: errors as {error}, an array (a range) as its
 * first value, -0 and empty as 0.
 * @param {any} value
 */
function fromEngine(value) {
  if (value instanceof FormulaError) return {error: value.error};
  if (Array.isArray(value)) return fromEngine(Array.isArray(value[0]) ? value[0][0] : value[0]);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return {error: '#NUM!'};
    return value === 0 ? 0 : value;
  }
  // A formula that is only a reference to an empty cell shows 0, as spreadsheets do.
  if (value === undefined || value === null) return 0;
  return value;
}

/**
 * The sheet's cells as the server has them at one seq (its used range), read in parts of
 * at most `chunk` cells, for formulas that refer to cells not loaded for the view.
 */
export class SheetCells {
  /**
   * @param {{usedRange: (at: number|null) => Promise<{lastRow: number, lastColumn: number}>,
   *          read: (range: string, at: number|null) => Promise<{rows: any[][], formats?: string[][]}>,
   *          chunk?: number}} source
   */
  constructor({usedRange, read, chunk = 200000}) {
    this.usedRange = usedRange;
    this.read = read;
    this.chunk = chunk;
    /** @type {Map<string, any>} "row:column" -> content (filled cells only) */
    this.cells = new Map();
    /** @type {Map<string, string>} "row:column" -> number format (cells that have one) */
    this.formats = new Map();
    this.complete = false;  // the whole used range is here
    this.lastRow = 0;       // the used range read
    this.lastColumn = 0;
    this.token = 0;
  }

  /**
   * Reads the sheet as of `at` (null: the head). Resolves true when it replaced the cells
   * (a newer load overtakes an older one, which then resolves false).
   * @param {number|null} at
   * @param {(row: number, column: number) => string} ref A1 name of a cell
   */
  async load(at, ref) {
    const token = ++this.token;
    const used = await this.usedRange(at);
    if (token !== this.token) return false;
    const lastRow = Math.max(0, used.lastRow);
    const lastColumn = Math.max(0, used.lastColumn);
    if (lastRow * lastColumn > MAX_SHEET_CELLS) {
      this.cells = new Map();
      this.formats = new Map();
      this.lastRow = lastRow;
      this.lastColumn = lastColumn;
      this.complete = false;
      return true;
    }
    /** @type {Map<string, any>} */
    const cells = new Map();
    /** @type {Map<string, string>} */
    const formats = new Map();
    const band = Math.max(1, Math.floor(this.chunk / Math.max(1, lastColumn)));
    for (let first = 1; first <= lastRow; first += band) {
      const last = Math.min(lastRow, first + band - 1);
      const data = await this.read(`${ref(first, 1)}:${ref(last, lastColumn)}`, at);
      if (token !== this.token) return false;
      data.rows.forEach((line, i) => line.forEach((value, j) => {
        if (value !== null && value !== undefined) cells.set(`${first + i}:${j + 1}`, value);
      }));
      data.formats?.forEach((line, i) => line.forEach((format, j) => {
        if (format) formats.set(`${first + i}:${j + 1}`, format);
      }));
    }
    this.cells = cells;
    this.formats = formats;
    this.lastRow = lastRow;
    this.lastColumn = lastColumn;
    this.complete = true;
    return true;
  }

  /**
   * @param {number} row
   * @param {number} column
   * @returns {any} the content, null when empty; undefined when not read (too big)
   */
  get(row, column) {
    const value = this.cells.get(`${row}:${column}`);
    if (value !== undefined) return value;
    return this.complete ? null : undefined;
  }
}

/**
 * The cells whose shown text or content holds `needle` (case-insensitive), in reading
 * order (row by row): what a spreadsheet's Find goes through. `cells` gives each filled
 * cell's content, `shown(row, column, content)` the text the grid shows for it.
 * @param {Iterable<[string, any]>} cells "row:column" -> content
 * @param {string} needle
 * @param {(row: number, column: number, content: any) => string} shown
 * @returns {{row: number, column: number}[]}
 */
export function findCells(cells, needle, shown) {
  const query = needle.toLowerCase();
  if (!query) return [];
  /** @type {{row: number, column: number}[]} */
  const found = [];
  for (const [key, content] of cells) {
    const [row, column] = key.split(':').map(Number);
    const text = typeof content === 'string' ? content : String(content ?? '');
    if (text.toLowerCase().includes(query) ||
        shown(row, column, content).toLowerCase().includes(query)) {
      found.push({row, column});
    }
  }
  return found.sort((a, b) => a.row - b.row || a.column - b.column);
}

/**
 * The match to go to from the active cell: the first after it in reading order
 * (`step` 1) or the last before it (`step` -1), wrapping around; -1 when none.
 * @param {{row: number, column: number}[]} matches sorted (findCells)
 * @param {{row: number, column: number}} from
 * @param {1|-1} step
 */
export function nextMatch(matches, from, step) {
  if (matches.length === 0) return -1;
  const after = (/** @type {{row: number, column: number}} */ m) =>
    m.row > from.row || (m.row === from.row && m.column > from.column);
  if (step > 0) {
    const i = matches.findIndex(after);
    return i < 0 ? 0 : i;
  }
  for (let i = matches.length - 1; i >= 0; i--) {
    const m = matches[i];
    if (m.row < from.row || (m.row === from.row && m.column < from.column)) return i;
  }
  return matches.length - 1;
}
