// Unit tests of the console's formula values (formulas.js over the vendored engine) and of
// spreadsheet-standard entry: formulas moved by a paste, numbers typed in a display form,
// dates, find. Node's test runner, no browser.
import assert from 'node:assert/strict';
import {describe, test} from 'node:test';

import {dateOrder, dateSerial, editText, parseEntry, shiftFormula} from '../../a1.js';
import {formatCell} from '../../format.js';
import {CYCLE, FormulaEvaluator, SheetCells, findCells, formulaRefs, isFormula, nextMatch}
  from '../../formulas.js';

/**
 * An evaluator over cells given as {"A1": content, ...}.
 * @param {Record<string, any>} sheet
 */
function evaluatorOf(sheet) {
  const cells = new Map();
  for (const [ref, value] of Object.entries(sheet)) {
    const [, letters, digits] = /^([A-Z]+)(\d+)$/.exec(ref);
    let column = 0;
    for (const ch of letters) column = column * 26 + ch.charCodeAt(0) - 64;
    cells.set(`${digits}:${column}`, value);
  }
  const evaluator = new FormulaEvaluator((row, column) => cells.get(`${row}:${column}`) ?? null);
  return {
    cells,
    value(ref) {
      const [, letters, digits] = /^([A-Z]+)(\d+)$/.exec(ref);
      let column = 0;
      for (const ch of letters) column = column * 26 + ch.charCodeAt(0) - 64;
      return evaluator.value(Number(digits), column);
    },
    evaluator,
  };
}

describe('formulas', () => {
  test('compute sums, arithmetic, text and functions over the cells they refer to', () => {
    const sheet = evaluatorOf({
      B2: 420.5, B3: 380.09, B4: 500, B5: 380, B6: '=SUM(B2:B5)',
      C1: '=B6*2', C2: '=IF(B6>1000,"big","small")', C3: '="total: "&B6', C4: '=ROUND(AVERAGE(B2:B5),2)',
      C5: '=DATE(2026,12,7)', C6: '=B7', C7: 'text', C8: '=UPPER(C7)', C9: '=VLOOKUP(500,B2:B5,1,FALSE)',
    });
    assert.equal(sheet.value('B6'), 1680.59);
    assert.equal(sheet.value('C1'), 3361.18);
    assert.equal(sheet.value('C2'), 'big');
    assert.equal(sheet.value('C3'), 'total: 1680.59');
    assert.equal(sheet.value('C4'), 420.15);
    assert.equal(sheet.value('C5'), dateSerial(2026, 12, 7));
    assert.equal(sheet.value('C6'), 0);  // an empty cell is 0 in arithmetic...
    assert.equal(sheet.value('C8'), 'TEXT');
    assert.equal(sheet.value('C9'), 500);
    assert.equal(sheet.value('B2'), 420.5);  // not a formula: the content
    assert.equal(sheet.value('Z99'), null);
  });

  test('errors are the spreadsheet codes, and propagate to formulas that use them', () => {
    const sheet = evaluatorOf({
      A1: '=1/0', A2: '=NOSUCHFUNCTION(1)', A3: '="a"+1', A4: '=A1+1', A5: '=SUM(', A6: '=#REF!',
      A7: '=XFD1048576+1', A8: '=IFERROR(A1,"fallback")', A9: '=SQRT(-1)', A10: '=NA()',
    });
    assert.deepEqual(sheet.value('A1'), {error: '#DIV/0!'});
    assert.deepEqual(sheet.value('A2'), {error: '#NAME?'});
    assert.deepEqual(sheet.value('A3'), {error: '#VALUE!'});
    assert.deepEqual(sheet.value('A4'), {error: '#DIV/0!'});
    assert.deepEqual(sheet.value('A5'), {error: '#ERROR!'});
    assert.deepEqual(sheet.value('A6'), {error: '#REF!'});
    assert.equal(sheet.value('A7'), 1);
    assert.equal(sheet.value('A8'), 'fallback');
    assert.deepEqual(sheet.value('A9'), {error: '#NUM!'});
    assert.deepEqual(sheet.value('A10'), {error: '#N/A'});
  });

  test('a circular reference is #CYCLE! in every cell of the cycle, and in what uses it', () => {
    const sheet = evaluatorOf({A1: '=B1+1', B1: '=C1*2', C1: '=A1', D1: '=A1+5', E1: '=E1'});
    assert.deepEqual(sheet.value('D1'), {error: CYCLE});
    for (const ref of ['A1', 'B1', 'C1', 'E1']) assert.deepEqual(sheet.value(ref), {error: CYCLE}, ref);
  });

  test('a chain thousands deep computes without overflowing the stack, a long cycle too', () => {
    const chain = {A1: 1};
    for (let r = 2; r <= 6000; r++) chain[`A${r}`] = `=A${r - 1}+1`;
    assert.equal(evaluatorOf(chain).value('A6000'), 6000);
    const ring = {...chain, A1: '=A6000'};
    assert.deepEqual(evaluatorOf(ring).value('A3000'), {error: CYCLE});
  });

  test('recompute after reset sees changed cells; a few thousand formulas compute fast', () => {
    const sheet = evaluatorOf({A1: 2, A2: '=A1*10'});
    assert.equal(sheet.value('A2'), 20);
    sheet.cells.set('1:1', 3);
    assert.equal(sheet.value('A2'), 20);  // memoised until reset
    sheet.evaluator.reset();
    assert.equal(sheet.value('A2'), 30);
    const big = {};
    for (let r = 1; r <= 3000; r++) {
      big[`A${r}`] = r;
      big[`B${r}`] = `=A${r}*2+SUM($A$1:A${Math.min(r, 5)})`;
    }
    const many = evaluatorOf(big);
    const started = performance.now();
    for (let r = 1; r <= 3000; r++) many.value(`B${r}`);
    const elapsed = performance.now() - started;
    assert.equal(many.value('B3000'), 6000 + 15);
    // Generous: a bound that catches a quadratic recompute, not a benchmark.
    assert.ok(elapsed < 3000, `3,000 formulas took ${elapsed} ms`);
  });

  test('functions the parser lacks come from formula.js, errors in their arguments propagate', () => {
    const sheet = evaluatorOf({
      A1: 3, A2: 9, A3: 'x', A4: '=1/0', B1: 'hello',
      C1: '=MAX(A1:A3)', C2: '=MIN(A1:A2)', C3: '=UPPER(B1)', C4: '=MATCH(9,A1:A3,0)',
      C5: '=CHOOSE(2,"a","b")', C6: '=MAX(A1:A4)', C7: '=ROUND(PMT(0.05/12,360,100000),2)',
      C8: '=TEXTJOIN("-",TRUE,A1:A3)', C9: '=COUNTA(A1:A4)', C10: '=MEDIAN(A1:A2)',
    });
    assert.equal(sheet.value('C1'), 9);
    assert.equal(sheet.value('C2'), 3);
    assert.equal(sheet.value('C3'), 'HELLO');
    assert.equal(sheet.value('C4'), 2);
    assert.equal(sheet.value('C5'), 'b');
    assert.deepEqual(sheet.value('C6'), {error: '#DIV/0!'});
    assert.equal(sheet.value('C7'), -536.82);
    assert.equal(sheet.value('C8'), '3-9-x');
    assert.equal(sheet.value('C9'), 4);  // COUNTA counts an error as a value
    assert.equal(sheet.value('C10'), 6);
  });

  test('formulaRefs finds the cells a formula refers to, not literals, functions or other sheets', () => {
    const refs = (f) => formulaRefs(f, 100, 10).map((r) => [r.firstRow, r.firstColumn, r.lastRow, r.lastColumn]);
    assert.deepEqual(refs('=A1+$B$2*c3'), [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]);
    assert.deepEqual(refs('=SUM(B5:A2)'), [[2, 1, 5, 2]]);
    assert.deepEqual(refs('="A1"&LOG10(A2)&Sheet2!A3&\'My sheet\'!A4'), [[2, 1, 2, 1]]);
    assert.deepEqual(refs('=SUM(B:B)+SUM(3:4)'), [[1, 2, 100, 2], [3, 1, 4, 10]]);
    assert.deepEqual(refs('=ABC'), []);
  });

  test('isFormula', () => {
    assert.equal(isFormula('=A1'), true);
    assert.equal(isFormula('='), false);
    assert.equal(isFormula('A1'), false);
    assert.equal(isFormula(5), false);
  });

  test('SheetCells reads the used range in bands, and only that', async () => {
    const reads = [];
    const cells = new SheetCells({
      usedRange: async () => ({lastRow: 5, lastColumn: 2}),
      read: async (range) => {
        reads.push(range);
        const [, first, last] = /^A(\d+):B(\d+)$/.exec(range).map(Number);
        const rows = [];
        for (let r = first; r <= last; r++) rows.push([r, r === 3 ? '=A3' : null]);
        return {rows, formats: rows.map(() => ['0%', ''])};
      },
      chunk: 4,
    });
    const ref = (row, column) => `${String.fromCharCode(64 + column)}${row}`;
    assert.equal(await cells.load(null, ref), true);
    assert.deepEqual(reads, ['A1:B2', 'A3:B4', 'A5:B5']);
    assert.equal(cells.get(3, 2), '=A3');
    assert.equal(cells.get(4, 2), null);
    assert.equal(cells.get(99, 9), null);
    assert.equal(cells.formats.get('2:1'), '0%');
  });
});

describe('entry', () => {
  test('a pasted formula moves its relative references, as the server does', () => {
    assert.equal(shiftFormula('A1', 1, 1), 'B2');
    assert.equal(shiftFormula('$A$1+A$1+$A1', 1, 1), '$A$1+B$1+$A2');
    assert.equal(shiftFormula('SUM(B2:B5)', 3, 0), 'SUM(B5:B8)');
    assert.equal(shiftFormula('"A1"&A1', 0, 1), '"A1"&B1');          // literals stay
    assert.equal(shiftFormula("'My A1'!A1", 0, 1), "'My A1'!B1");     // quoted sheet names stay
    assert.equal(shiftFormula('LOG10(A1)', 0, 1), 'LOG10(B1)');       // functions stay
    assert.equal(shiftFormula('A:A+1:1+abc1', 1, 1), 'A:A+1:1+abc1'); // whole columns, rows
    assert.equal(shiftFormula('A1', -1, 0), '#REF!');                 // off the grid
    assert.equal(shiftFormula('XFD1', 0, 1), '#REF!');
    assert.equal(shiftFormula('A007', 1, 0), 'A8');
  });

  test('numbers typed in a display form become numbers with that format', () => {
    assert.deepEqual(parseEntry('1,234.50'), {value: 1234.5, format: '#,##0.00'});
    assert.deepEqual(parseEntry('-1,234'), {value: -1234, format: '#,##0'});
    assert.deepEqual(parseEntry('5%'), {value: 0.05, format: '0%'});
    assert.deepEqual(parseEntry('12.5%'), {value: 0.125, format: '0.0%'});
    assert.deepEqual(parseEntry('$12'), {value: 12, format: '$#,##0'});
    assert.deepEqual(parseEntry('$1,234.50'), {value: 1234.5, format: '$#,##0.00'});
    assert.deepEqual(parseEntry('42'), {value: 42, format: ''});
    assert.deepEqual(parseEntry('1,23'), {value: '1,23', format: ''});  // not grouping: text
    assert.deepEqual(parseEntry('=A1'), {value: '=A1', format: ''});
    assert.deepEqual(parseEntry(''), {value: null, format: ''});
    for (const [text, format] of [['1,234.50', '#,##0.00'], ['5%', '0%'], ['$12', '$#,##0']]) {
      assert.equal(formatCell(parseEntry(text).value, format), text);
    }
  });

  test('dates: ISO, and the locale\'s numeric order', () => {
    const serial = dateSerial(2026, 12, 7);
    assert.equal(serial, 46363);
    assert.deepEqual(parseEntry('2026-12-07'), {value: serial, format: 'yyyy-mm-dd'});
    assert.deepEqual(parseEntry('12/7/2026', 'en-US'), {value: serial, format: 'm/d/yyyy'});
    assert.deepEqual(parseEntry('7/12/2026', 'en-GB'), {value: serial, format: 'd/m/yyyy'});
    assert.deepEqual(parseEntry('7.12.2026', 'de-DE'), {value: serial, format: 'd.m.yyyy'});
    assert.deepEqual(parseEntry('2026/12/07', 'ja-JP'), {value: serial, format: 'yyyy/mm/dd'});
    assert.deepEqual(parseEntry('2/30/2026', 'en-US'), {value: '2/30/2026', format: ''});  // no such day
    assert.equal(dateOrder('en-US'), 'mdy');
    assert.equal(dateOrder('de-DE'), 'dmy');
    assert.equal(formatCell(serial, 'yyyy-mm-dd'), '2026-12-07');
    assert.equal(formatCell(serial, 'm/d/yyyy'), '12/7/2026');
    assert.equal(formatCell(serial, 'd.m.yyyy'), '7.12.2026');
  });

  test('the editor shows percentages and dates as typed, in the locale\'s order', () => {
    assert.equal(editText(0.05, '0%'), '5%');
    assert.equal(editText(0.125, '0.0%'), '12.5%');
    assert.equal(editText(46363, 'yyyy-mm-dd'), '2026-12-07');
    assert.equal(editText(46363, 'm/d/yyyy', 'en-US'), '12/7/2026');
    assert.equal(editText(46363, 'm/d/yyyy', 'de-DE'), '2026-12-07');  // not the locale's order
    assert.equal(editText(46363, 'd.m.yyyy', 'de-DE'), '7.12.2026');
    assert.equal(editText(1234.5, '#,##0.00'), '1234.5');
    assert.equal(editText('=A1', '0%'), '=A1');
    for (const [value, format, locale] of [[0.05, '0%', 'en-US'], [46363, 'm/d/yyyy', 'en-US'],
                                           [46363, 'd.m.yyyy', 'de-DE']]) {
      assert.deepEqual(parseEntry(editText(value, format, locale), locale), {value, format});
    }
  });

  test('find goes through values and formulas in reading order, wrapping around', () => {
    const cells = new Map([['2:1', 'apple'], ['1:2', '=SUM(A1:A3)'], ['3:1', 1680.59], ['1:1', 'Pineapple']]);
    const shown = (row, column, content) => (content === '=SUM(A1:A3)' ? '1680.59' : String(content));
    assert.deepEqual(findCells(cells, 'APPLE', shown), [{row: 1, column: 1}, {row: 2, column: 1}]);
    assert.deepEqual(findCells(cells, 'sum(', shown), [{row: 1, column: 2}]);
    assert.deepEqual(findCells(cells, '1680', shown), [{row: 1, column: 2}, {row: 3, column: 1}]);
    assert.deepEqual(findCells(cells, '', shown), []);
    const matches = [{row: 1, column: 2}, {row: 3, column: 1}, {row: 5, column: 5}];
    assert.equal(nextMatch(matches, {row: 1, column: 1}, 1), 0);
    assert.equal(nextMatch(matches, {row: 1, column: 2}, 1), 1);
    assert.equal(nextMatch(matches, {row: 5, column: 5}, 1), 0);   // wraps
    assert.equal(nextMatch(matches, {row: 3, column: 1}, -1), 0);
    assert.equal(nextMatch(matches, {row: 1, column: 2}, -1), 2);  // wraps back
    assert.equal(nextMatch([], {row: 1, column: 1}, 1), -1);
  });
});
