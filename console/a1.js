// SPDX-License-Identifier: Apache-2.0
// A1 notation: column 1 is "A", 26 "Z", 27 "AA"; rows are 1-based.

export function columnName(column) {
  let name = '';
  for (let n = column; n > 0; n = Math.floor((n - 1) / 26)) {
    name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  }
  return name;
}

export function columnNumber(name) {
  let n = 0;
  for (const ch of name.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n;
}

export function cellRef(row, column) {
  return `${columnName(column)}${row}`;
}

// "B7" -> {row: 7, column: 2}; null when it is not a cell reference.
export function parseRef(text) {
  const match = /^([A-Za-z]{1,3})([1-9][0-9]*)$/.exec(text.trim());
  if (!match) return null;
  return {row: Number(match[2]), column: columnNumber(match[1])};
}

export function rangeRef(firstRow, firstColumn, lastRow, lastColumn) {
  return `${cellRef(firstRow, firstColumn)}:${cellRef(lastRow, lastColumn)}`;
}

// What a user typed into a cell, as the JSON value a SetCell carries: numbers stay
// numbers, TRUE/FALSE booleans, "" clears (null), anything else (formulas included)
// is a string.
export function parseInput(text) {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(trimmed)) {
    const number = Number(trimmed);
    if (Number.isFinite(number)) return number;
  }
  if (/^true$/i.test(trimmed)) return true;
  if (/^false$/i.test(trimmed)) return false;
  return text;
}

// A cell value as the grid shows it.
export function displayValue(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number') {
    return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(12)));
  }
  return String(value);
}

// A cell value in the form the editor shows (and parseInput reads back).
export function editValue(value) {
  return displayValue(value);
}
