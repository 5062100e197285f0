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

// The grid's size in XLSX: a reference moved past it becomes #REF!.
const MAX_COLUMNS = 16384;
const MAX_ROWS = 1048576;

// `formula` (with or without its '=') with every relative A1 reference moved by `rows`
// and `cols`, as a spreadsheet does when a formula is pasted elsewhere. The server's
// rules (src/sheet/formula_shift.h), so that a paste and an import at an offset agree:
//   references   $?COL$?ROW with 1..3 upper-case letters and a row number, not followed
//                by '(' (a function) or '!' (a sheet name); each end of a range is one;
//                the $-anchored parts stay; the row is written without leading zeros.
//   left alone   "string literals" and 'quoted sheet names' (doubled quotes inside),
//                names and functions, lower-case letters, tokens with more than 3
//                letters or anything after the digits, whole-column and whole-row
//                references ("A:A", "1:1").
//   off the grid a reference that lands outside A..XFD, 1..1048576 becomes #REF!.
export function shiftFormula(formula, rows, cols) {
  let out = '';
  let i = 0;
  const isNameChar = (c) => /[A-Za-z0-9_.$]/.test(c);
  while (i < formula.length) {
    const c = formula[i];
    if (c === '"' || c === "'") {
      let end = i + 1;
      while (end < formula.length) {
        if (formula[end] === c) {
          if (formula[end + 1] === c) {
            end += 2;
            continue;
          }
          break;
        }
        end++;
      }
      end = Math.min(end + 1, formula.length);
      out += formula.slice(i, end);
      i = end;
      continue;
    }
    if (!isNameChar(c)) {
      out += c;
      i++;
      continue;
    }
    let end = i;
    while (end < formula.length && isNameChar(formula[end])) end++;
    const token = formula.slice(i, end);
    i = end;
    const match = /^(\$?)([A-Z]{1,3})(\$?)([0-9]+)$/.exec(token);
    const next = formula[end];
    if (!match || next === '(' || next === '!') {
      out += token;
      continue;
    }
    const [, colFixed, letters, rowFixed, digits] = match;
    const column = columnNumber(letters) + (colFixed ? 0 : cols);
    const row = Number(digits) + (rowFixed ? 0 : rows);
    if (column < 1 || column > MAX_COLUMNS || row < 1 || row > MAX_ROWS) {
      out += '#REF!';
      continue;
    }
    out += `${colFixed}${columnName(column)}${rowFixed}${row}`;
  }
  return out;
}

// Days from 1899-12-30 (the spreadsheet serial date epoch) to a calendar date (UTC).
export function dateSerial(year, month, day) {
  return Math.round((Date.UTC(year, month - 1, day) - Date.UTC(1899, 11, 30)) / 86400000);
}

// The order a locale writes a numeric date in: 'mdy' (en-US), 'dmy' (en-GB, de, fr) or
// 'ymd' (ja, zh, sv), from Intl.
export function dateOrder(locale) {
  try {
    const parts = new Intl.DateTimeFormat(locale, {year: 'numeric', month: '2-digit', day: '2-digit'})
      .formatToParts(new Date(Date.UTC(2026, 11, 7, 12)));
    const order = parts.filter((p) => p.type === 'year' || p.type === 'month' || p.type === 'day')
      .map((p) => p.type[0]).join('');
    return ['mdy', 'dmy', 'ymd'].includes(order) ? order : 'mdy';
  } catch {
    return 'mdy';
  }
}

// What a user typed (or pasted) into a cell, as a spreadsheet reads it: the value a
// SetCell carries and, for numbers written in a display form, the number format that
// shows them that way again (kept with the cell):
//   "1,234.50" -> 1234.5 "#,##0.00"    "5%" -> 0.05 "0%"    "$12" -> 12 "$#,##0"
//   "2026-12-07" -> 46363 "yyyy-mm-dd" (a serial date), and the locale's numeric form:
//   "12/7/2026" in en-US ("m/d/yyyy"), "7/12/2026" or "7.12.2026" in de/en-GB
//   ("d/m/yyyy", "d.m.yyyy"). Anything else as parseInput reads it (format none).
// Separators are the English ones ("," groups, "." is the decimal point).
export function parseEntry(text, locale = 'en-US') {
  const trimmed = text.trim();
  const decimals = (digits) => (digits ? `.${'0'.repeat(digits.length)}` : '');
  // 1,234.50 — groups of three after the first.
  let m = /^([+-]?)(\d{1,3}(?:,\d{3})+)(?:\.(\d*))?$/.exec(trimmed);
  if (m) {
    const value = Number(`${m[1]}${m[2].replace(/,/g, '')}.${m[3] || '0'}`);
    return {value, format: `#,##0${decimals(m[3])}`};
  }
  // 5%, 12.5%, -3 %
  m = /^([+-]?(?:\d+(?:\.(\d*))?|\.(\d+)))\s?%$/.exec(trimmed);
  if (m) {
    const digits = m[2] || m[3] || '';
    const value = Number((Number(m[1]) / 100).toPrecision(15));
    return {value, format: `0${decimals(digits)}%`};
  }
  // $12, $1,234.50, -$5
  m = /^([+-]?)\$\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d*))?$/.exec(trimmed);
  if (m) {
    const value = Number(`${m[1]}${m[2].replace(/,/g, '')}.${m[3] || '0'}`);
    return {value, format: `$#,##0${decimals(m[3])}`};
  }
  // Dates: ISO, then the locale's numeric order with / . or - between.
  m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(trimmed);
  if (m) {
    const date = validDate(Number(m[1]), Number(m[2]), Number(m[3]));
    if (date !== null) return {value: date, format: 'yyyy-mm-dd'};
  }
  m = /^(\d{1,4})([/.-])(\d{1,2})\2(\d{1,4})$/.exec(trimmed);
  if (m) {
    const order = /^\d{4}$/.test(m[1]) ? 'ymd' : dateOrder(locale);
    const sep = m[2];
    const [a, b, c] = [Number(m[1]), Number(m[3]), Number(m[4])];
    const year = (y) => (m[order === 'ymd' ? 1 : 4].length <= 2 ? 2000 + y : y);
    let date = null;
    let format = '';
    if (order === 'ymd') {
      date = validDate(year(a), b, c);
      format = `yyyy${sep}mm${sep}dd`;
    } else if (order === 'dmy') {
      date = validDate(year(c), b, a);
      format = `d${sep}m${sep}yyyy`;
    } else {
      date = validDate(year(c), a, b);
      format = `m${sep}d${sep}yyyy`;
    }
    if (date !== null) return {value: date, format};
  }
  return {value: parseInput(text), format: ''};
}

function validDate(year, month, day) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || year < 1900 || year > 9999) return null;
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return dateSerial(year, month, day);
}

// The day formats parseEntry gives (and reads back).
const DAY_FORMAT = /^(yyyy-mm-dd|yyyy\/mm\/dd|yyyy\.mm\.dd|([md])([/.-])([md])\3yyyy)$/;

export function isDayFormat(format) {
  return DAY_FORMAT.test(format);
}

// A cell's content as the editor and the formula bar show it: a percentage as "5%" and a
// date in a day format parseEntry reads back ("2026-12-07", "12/7/2026") as that text, so
// that editing shows what was typed and F2, Enter changes nothing; anything else as
// editValue.
// A day written month-first or day-first the other way round from the locale's order
// shows as ISO (so that parseEntry, which reads the locale's order, reads it back).
export function editText(value, format, locale = 'en-US') {
  if (typeof value !== 'number' || !format) return editValue(value);
  if (/^0(\.0+)?%$/.test(format)) return `${Number((value * 100).toPrecision(12))}%`;
  let date = DAY_FORMAT.exec(format);
  if (date && date[2] && (date[2] === 'm' ? 'mdy' : 'dmy') !== dateOrder(locale)) {
    format = 'yyyy-mm-dd';
    date = DAY_FORMAT.exec(format);
  }
  if (date && Number.isInteger(value)) {
    const when = new Date(Date.UTC(1899, 11, 30) + value * 86400000);
    const y = when.getUTCFullYear();
    const m = when.getUTCMonth() + 1;
    const d = when.getUTCDate();
    const pad = (n) => String(n).padStart(2, '0');
    if (!date[2]) return format.replace('yyyy', String(y)).replace('mm', pad(m)).replace('dd', pad(d));
    return format.replace('yyyy', String(y)).replace(/[md]/g, (t) => String(t === 'm' ? m : d));
  }
  return editValue(value);
}
