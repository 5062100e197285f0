// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Tab-separated text, the clipboard format spreadsheets exchange a range in (Excel,
// LibreOffice, Google Sheets): one line per row, a tab between fields; a field holding
// a tab, a line break or a quote is quoted, with quotes doubled.

/**
 * @param {string[][]} rows
 * @returns {string}
 */
export function toTsv(rows) {
  return rows.map((row) => row.map((field) =>
    (/[\t\r\n"]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field)).join('\t'))
      .join('\n');
}

/**
 * Rows of fields from tab-separated text: CRLF, CR and LF end lines, a final line
 * break ends the last row (it adds no empty row), quoted fields may hold tabs, line
 * breaks and doubled quotes. A quote inside an unquoted field is kept as it is.
 * @param {string} text
 * @returns {string[][]}
 */
export function parseTsv(text) {
  /** @type {string[][]} */
  const rows = [];
  /** @type {string[]} */
  let row = [];
  let field = '';
  let i = 0;
  let atFieldStart = true;
  while (i < text.length) {
    const ch = text[i];
    if (atFieldStart && ch === '"') {
      // A quoted field: up to the closing quote (a doubled quote is one quote).
      let end = i + 1;
      let value = '';
      for (;;) {
        const quote = text.indexOf('"', end);
        if (quote < 0) {  // never closed: the rest is the field, as written
          value += text.slice(end);
          end = text.length;
          break;
        }
        value += text.slice(end, quote);
        if (text[quote + 1] === '"') {
          value += '"';
          end = quote + 2;
        } else {
          end = quote + 1;
          break;
        }
      }
      field = value;
      i = end;
      atFieldStart = false;
      continue;
    }
    atFieldStart = false;
    if (ch === '\t') {
      row.push(field);
      field = '';
      atFieldStart = true;
      i++;
    } else if (ch === '\r' || ch === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      atFieldStart = true;
      i += ch === '\r' && text[i + 1] === '\n' ? 2 : 1;
    } else {
      field += ch;
      i++;
    }
  }
  if (!atFieldStart || field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
