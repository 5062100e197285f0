// Unit tests of the console's pure helpers: node's test runner, no browser. The
// browser tests (../console.test.mjs) drive the pages themselves.
import assert from 'node:assert/strict';
import {describe, test} from 'node:test';

import {cellRef, columnName, columnNumber, displayValue, parseInput, parseRef, rangeRef}
  from '../../a1.js';
import {isTransient, rectOf} from '../../edits.js';
import {ApiError} from '../../api.js';
import {cellsOf, describeEntry, touches} from '../../entries.js';
import {formatBytes, formatCell, formatNumber, formatTime, formatUsd, preview}
  from '../../format.js';
import {dataEdge} from '../../grid.js';
import {parseMetrics, sumMetric} from '../../metrics.js';
import {sameValue} from '../../pages/grid_tab.js';
import {EventStreamParser} from '../../sse.js';
import {parseTsv, toTsv} from '../../tsv.js';

describe('A1 notation', () => {
  test('columns are bijective base 26', () => {
    for (const [n, name] of [[1, 'A'], [26, 'Z'], [27, 'AA'], [52, 'AZ'], [53, 'BA'],
                             [702, 'ZZ'], [703, 'AAA'], [16384, 'XFD']]) {
      assert.equal(columnName(n), name);
      assert.equal(columnNumber(name), n);
      assert.equal(columnNumber(name.toLowerCase()), n);
    }
  });

  test('references parse and print', () => {
    assert.deepEqual(parseRef('B7'), {row: 7, column: 2});
    assert.deepEqual(parseRef(' xfd1048576 '), {row: 1048576, column: 16384});
    for (const bad of ['', 'A', '7', 'A0', 'A07', 'ABCD1', 'A1:B2', '$A$1', 'A-1']) {
      assert.equal(parseRef(bad), null, bad);
    }
    assert.equal(cellRef(3, 28), 'AB3');
    assert.equal(rangeRef(1, 1, 64, 16), 'A1:P64');
  });

  test('typed text becomes the JSON value a SetCell carries', () => {
    assert.equal(parseInput('42'), 42);
    assert.equal(parseInput(' -1.5e3 '), -1500);
    assert.equal(parseInput('.5'), 0.5);
    assert.equal(parseInput('TRUE'), true);
    assert.equal(parseInput('false'), false);
    assert.equal(parseInput(''), null);
    assert.equal(parseInput('   '), null);
    assert.equal(parseInput('=SUM(A1:A3)'), '=SUM(A1:A3)');
    assert.equal(parseInput('  two words '), '  two words ', 'text keeps its spaces');
    assert.equal(parseInput('1e999'), '1e999', 'not a finite number: text');
    assert.equal(parseInput('0x10'), '0x10');
    assert.equal(parseInput('ünïcödé'), 'ünïcödé');
  });

  test('values display as the grid shows them', () => {
    assert.equal(displayValue(null), '');
    assert.equal(displayValue(true), 'TRUE');
    assert.equal(displayValue(0.1 + 0.2), '0.3');
    assert.equal(displayValue(12), '12');
    assert.equal(displayValue('x'), 'x');
  });
});

describe('formatting', () => {
  test('money is plain decimal, never exponent notation', () => {
    assert.equal(formatUsd(0), '$0');
    assert.equal(formatUsd(1.14e-7), '$0.000000114');
    assert.equal(formatUsd(0.0042), '$0.0042');
    assert.equal(formatUsd(0.01), '$0.01');
    assert.equal(formatUsd(12.345), '$12.35');
    assert.equal(formatUsd(-2.5e-6), '-$0.0000025');
    assert.doesNotMatch(formatUsd(3.3e-15), /e/);
  });

  test('sizes, counts, times, previews', () => {
    assert.equal(formatBytes(286), '286 B');
    assert.equal(formatBytes(6 * 1024 * 1024), '6.0 MiB');
    assert.equal(formatBytes(null), '—');
    assert.equal(formatNumber(1234567), '1,234,567');
    assert.equal(formatTime(1767225600), '2026-01-01 00:00:00');
    assert.equal(preview('abcdef', 4), 'abc…');
    assert.equal(preview({a: 1}), '{"a":1}');
  });

  test('cells under their number formats', () => {
    assert.equal(formatCell(0.125, '0.0%'), '12.5%');
    assert.equal(formatCell(1234.5, '#,##0.00'), '1,234.50');
    assert.equal(formatCell(3, '$#,##0'), '$3');
    assert.equal(formatCell(45306, 'yyyy-mm-dd'), '2024-01-15');
    assert.equal(formatCell(45306.5, 'yyyy-mm-dd hh:mm'), '2024-01-15 12:00');
    assert.equal(formatCell('text', '0.00'), 'text');
    assert.equal(formatCell(2, ''), '2');
  });
});

describe('tab-separated text (the clipboard)', () => {
  test('round-trips fields with tabs, line breaks and quotes', () => {
    const rows = [['a', 'b\tc', 'line\nbreak'], ['say "hi"', '', '3']];
    const text = toTsv(rows);
    assert.equal(text, 'a\t"b\tc"\t"line\nbreak"\n"say ""hi"""\t\t3');
    assert.deepEqual(parseTsv(text), rows);
  });

  test('reads what spreadsheets put on the clipboard', () => {
    assert.deepEqual(parseTsv('1\t2\r\n3\t4\r\n'), [['1', '2'], ['3', '4']]);
    assert.deepEqual(parseTsv('x'), [['x']]);
    assert.deepEqual(parseTsv('a\t\tb\n'), [['a', '', 'b']]);
    assert.deepEqual(parseTsv('\n\n'), [[''], ['']]);
    assert.deepEqual(parseTsv('5" drive\t2'), [['5" drive', '2']]);
    assert.deepEqual(parseTsv('"never closed\tx'), [['never closed\tx']]);
    assert.deepEqual(parseTsv(''), []);
  });
});

describe('event stream parsing', () => {
  test('events split across reads, CRLF, comments and ids', () => {
    const parser = new EventStreamParser();
    assert.deepEqual(parser.feed('retry: 2000\n\n: heartbeat\n\nevent: en'), []);
    assert.deepEqual(parser.feed('try\nid: 7\ndata: {"seq"'), []);
    assert.deepEqual(parser.feed(': 7}\r'), []);
    assert.deepEqual(parser.feed('\n\r\nevent: gone\ndata: a\ndata: b\n\n'), [
      {type: 'entry', id: '7', data: '{"seq": 7}'},
      {type: 'gone', id: null, data: 'a\nb'},
    ]);
  });
});

describe('entries', () => {
  const rect = {firstRow: 5, lastRow: 5, firstColumn: 7, lastColumn: 7};  // G5

  test('a cell edit touches only its own cell', () => {
    assert.equal(touches({seq: 1, type: 'SetCell', body: {ref: 'G5', value: 1}}, rect), true);
    assert.equal(touches({seq: 1, type: 'SetCell', body: {ref: 'G2', value: 1}}, rect), false);
    assert.equal(touches({seq: 1, type: 'SetCellValueAndFormat', body: {row: 4, column: 6}}, rect), true);
    assert.equal(touches({seq: 1, type: 'SetCellValueAndFormat', body: {row: 4, column: 5}}, rect), false);
    assert.equal(touches({seq: 1, type: 'SetCells', body: {cells: {G5: 1}}}, rect), true);
    assert.equal(touches({seq: 1, type: 'SetCells', body: {cells: {G6: 1, A1: 2}}}, rect), false);
    assert.equal(touches({seq: 1, type: 'SetCells', body: {at: 'F4', rows: [[1], [1, 2]]}}, rect), true);
    assert.equal(touches({seq: 1, type: 'SetCells', body: {at: 'F4', rows: [[1, 2], [1]]}}, rect), false);
  });

  test('entries that change no cells never touch; moves and imports do', () => {
    for (const type of ['Snapshot', 'EndSegment', 'Note']) {
      assert.equal(touches({seq: 1, type, body: {ref: 'G5'}}, rect), false, type);
    }
    assert.equal(touches({seq: 1, type: 'InsertRows', body: {after: 2}}, rect), true);
    assert.equal(touches({seq: 1, type: 'InsertRows', body: {after: 5}}, rect), false);
    assert.equal(touches({seq: 1, type: 'DeleteColumns', body: {at: 'H'}}, rect), false);
    assert.equal(touches({seq: 1, type: 'InsertColumns', body: {after: 0}}, rect), true);
    assert.equal(touches({seq: 1, type: 'Import', body: {format: 'csv'}}, rect), true);
    assert.equal(touches({seq: 1, type: 'Import', body: {mode: 'merge', at: 'H1'}}, rect), false);
    assert.equal(touches({seq: 1, type: 'SetCell', body: null}, rect), true,
                 'a body kept in the blob store is assumed to');
  });

  test('descriptions and highlighted cells', () => {
    assert.equal(describeEntry({seq: 3, type: 'SetCell', body: {ref: 'A1', value: 'x'}}),
                 'SetCell A1 = x');
    assert.equal(describeEntry({seq: 3, type: 'Import', body: {format: 'xlsx', mode: 'merge', at: 'L1'}}),
                 'Import xlsx merge at L1');
    assert.deepEqual(cellsOf({seq: 1, type: 'SetCells', body: {at: 'B2', rows: [[1, 2]]}}),
                     [{row: 2, column: 2}, {row: 2, column: 3}]);
    assert.deepEqual(rectOf([{row: 3, column: 2}, {row: 1, column: 5}]),
                     {firstRow: 1, lastRow: 3, firstColumn: 2, lastColumn: 5});
  });

  test('a network failure or a 5xx is retried; a refusal is not', () => {
    assert.equal(isTransient(new TypeError('Failed to fetch')), true);
    assert.equal(isTransient(new ApiError(503, null)), true);
    assert.equal(isTransient(new ApiError(507, null)), true);
    assert.equal(isTransient(new ApiError(400, {error: {code: 'ValidationError'}})), false);
    assert.equal(isTransient(new ApiError(404, null)), false);
  });

  test('a no-op edit is recognised', () => {
    assert.equal(sameValue(42, 42), true);
    assert.equal(sameValue(null, null), true);
    assert.equal(sameValue({type: 'CellError', value: '#N/A'}, {type: 'CellError', value: '#N/A'}), true);
    assert.equal(sameValue('42', 42), false);
    assert.equal(sameValue(null, ''), false);
  });
});

describe('the data edge (Ctrl+arrow)', () => {
  const column = new Set([1, 2, 3, 7, 10]);
  const filled = (/** @type {number} */ i) => column.has(i);
  test('follows Excel', () => {
    assert.equal(dataEdge(1, 1, 10, 1048576, filled), 3, 'filled run: to its end');
    assert.equal(dataEdge(3, 1, 10, 1048576, filled), 7, 'end of a run: the next filled');
    assert.equal(dataEdge(4, 1, 10, 1048576, filled), 7, 'from a gap: the next filled');
    assert.equal(dataEdge(10, 1, 10, 1048576, filled), 1048576, 'nothing below: the grid end');
    assert.equal(dataEdge(12, 1, 12, 1048576, filled), 1048576);
    assert.equal(dataEdge(9, -1, 1, 1, filled), 7);
    assert.equal(dataEdge(3, -1, 1, 1, filled), 1);
    assert.equal(dataEdge(1, -1, 1, 1, filled), 1);
    assert.equal(dataEdge(6, -1, 1, 1, (i) => i === 9), 1, 'nothing above: row 1');
  });
});

describe('metrics', () => {
  test('Prometheus text', () => {
    const samples = parseMetrics('# HELP x\nsheetlog_queue_visible{queue="snapshots"} 3\n' +
                                 'sheetlog_queue_visible{queue="a\\"b"} 4\nsheetlog_appends 10\n\n');
    assert.deepEqual(samples[1].labels, {queue: 'a"b'});
    assert.equal(sumMetric(samples, 'sheetlog_queue_visible'), 7);
    assert.equal(sumMetric(samples, 'sheetlog_queue_visible', (l) => l.queue === 'snapshots'), 3);
    assert.equal(sumMetric(samples, 'sheetlog_appends'), 10);
  });
});
