// Browser tests of the web console (issue 16 section 2): Debian's chromium, driven by
// playwright-core, against the real sheetlog binary over loopback HTTP. Servers run with
// --clock manual; every wait is for a condition (DOM state or a server answer).
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {mkdirSync, readFileSync} from 'node:fs';
import path from 'node:path';
import {after, before, describe, test} from 'node:test';

import {api, append, cellValue, createSheet, launchBrowser, screenshotDir, startServer,
        waitForCellText, waitUntil} from './harness.mjs';

const TEST_OPTIONS = {timeout: 180000};

// RFC 4180 CSV (quotes, doubled quotes, CRLF) into rows of strings.
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') {
        quoted = false;
      } else {
        field += ch;
      }
    } else if (ch === '"') {
      quoted = true;
    } else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else {
      field += ch;
    }
  }
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

async function openSheet(page, server, sheet, suffix = '') {
  await page.goto(`${server.url}/console/sheets/${sheet}${suffix}`);
  await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-loading)');
}

async function activeRef(page) {
  return page.evaluate(() => {
    const grid = document.querySelector('[role="grid"]');
    const id = grid.getAttribute('aria-activedescendant');
    return id ? document.getElementById(id).dataset.ref : null;
  });
}

describe('console', () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer(['--clock', 'manual']);
    browser = await launchBrowser();
    mkdirSync(screenshotDir, {recursive: true});
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  test('is served by the binary with strict headers, and / redirects to it', TEST_OPTIONS, async () => {
    const root = await api(server, 'GET', '/');
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/console/');
    for (const route of ['/console/', '/console/sheets/3f0c0000-0000-4000-8000-000000000000',
                         '/console/pipeline']) {
      const page = await api(server, 'GET', route);
      assert.equal(page.status, 200, route);
      assert.match(page.headers.get('content-type'), /^text\/html/);
      assert.match(page.body, /<script type="module" src="\/console\/app.js">/);
      assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
      const csp = page.headers.get('content-security-policy');
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /connect-src 'self'/);
    }
    const script = await api(server, 'GET', '/console/app.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type'), /^text\/javascript/);
    const style = await api(server, 'GET', '/console/app.css');
    assert.match(style.headers.get('content-type'), /^text\/css/);
    const etag = style.headers.get('etag');
    assert.ok(etag);
    const again = await fetch(`${server.url}/console/app.css`, {headers: {'If-None-Match': etag}});
    assert.equal(again.status, 304);
    assert.equal((await api(server, 'GET', '/console/nothing-here.js')).status, 404);
  });

  test('creates a sheet from the sheets page', TEST_OPTIONS, async () => {
    const page = await browser.page();
    await page.goto(`${server.url}/console/`);
    await page.fill('#new-sheet-name', 'from the console');
    await page.click('button:has-text("Create sheet")');
    await page.waitForURL(/\/console\/sheets\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop();
    const sheet = await api(server, 'GET', `/v1/sheets/${id}`);
    assert.equal(sheet.status, 200);
    assert.equal(sheet.body.name, 'from the console');
    await page.waitForSelector('h1:has-text("from the console")');
    // Back on the list, it is there with its next seq.
    await page.click('a.nav-link[data-section="sheets"]');
    await page.waitForSelector(`tr[data-sheet="${id}"] td.num:has-text("1")`);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('deletes a sheet after a confirmation', TEST_OPTIONS, async () => {
    const id = await createSheet(server, {name: 'doomed'});
    const page = await browser.page();
    await page.goto(`${server.url}/console/`);
    await page.click(`tr[data-sheet="${id}"] button:has-text("Delete")`);
    await page.waitForSelector('dialog.modal[open]');
    await page.click('dialog.modal button:has-text("Cancel")');
    assert.equal((await api(server, 'GET', `/v1/sheets/${id}`)).status, 200);
    await page.click(`tr[data-sheet="${id}"] button:has-text("Delete")`);
    await page.click('dialog.modal button.btn-danger');
    await page.waitForSelector(`tr[data-sheet="${id}"]`, {state: 'detached'});
    assert.equal((await api(server, 'GET', `/v1/sheets/${id}`)).status, 404);
    await page.close();
  });

  test('typing into a cell appends it, the keyboard moves and cancels, and a reload shows it',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'typing'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await page.click('.grid-cell[data-ref="A1"]');
    assert.equal(await activeRef(page), 'A1');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowRight');
    assert.equal(await activeRef(page), 'B2');
    await page.keyboard.type('42');
    await page.keyboard.press('Enter');
    await waitUntil('B2 = 42 on the server', async () => (await cellValue(server, sheet, 'B2')) === 42);
    assert.equal(await activeRef(page), 'B3');  // Enter moves down

    // Escape drops an edit: nothing is appended.
    const before = (await api(server, 'GET', `/v1/sheets/${sheet}`)).body.next_seq;
    await page.keyboard.type('never');
    await page.waitForSelector('input.grid-editor');
    await page.keyboard.press('Escape');
    await page.waitForSelector('input.grid-editor', {state: 'detached'});
    assert.equal(await activeRef(page), 'B3');
    const focused = await page.evaluate(() => document.activeElement.outerHTML.slice(0, 80));
    await page.keyboard.press('Tab');
    assert.equal(await activeRef(page), 'C3', `focus was on ${focused}`);
    await page.keyboard.type('=B2*2');
    await page.keyboard.press('Tab');
    await waitUntil('C3 holds the formula', async () => (await cellValue(server, sheet, 'C3')) === '=B2*2');
    assert.equal(await activeRef(page), 'D3');
    const entries = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=${before}`)).body.entries;
    assert.deepEqual(entries.map((e) => [e.type, e.body.ref]), [['SetCell', 'C3']]);

    await page.reload();
    await waitForCellText(page, 'B2', '42');
    await waitForCellText(page, 'C3', '=B2*2');
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-rowcount'), '1048577');
    assert.ok(await page.locator('[role="gridcell"][data-ref="B2"]').count() === 1);
    assert.ok(await page.locator('[role="columnheader"]:has-text("B")').count() >= 1);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test("another client's append shows in the open page without reload", TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'live'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    const seqBefore = await page.textContent('#next-seq');
    // Updates arrive over the sheet's event stream (GET .../events).
    await page.waitForSelector('#live-state[data-transport="stream"]');
    await append(server, sheet, 'SetCell', {ref: 'C3', value: 'from another client'});
    await waitForCellText(page, 'C3', 'from another client');
    await append(server, sheet, 'SetCells', {at: 'A5', rows: [[1, 2], [3, 4]]});
    await waitForCellText(page, 'B6', '4');
    assert.notEqual(await page.textContent('#next-seq'), seqBefore);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('an edit that conflicts with another client is not applied, and the page says so',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'conflict'});
    const page = await browser.page();
    // Hold back the page's live updates (event stream and polling) so that it cannot
    // learn of the other append.
    await page.route((url) => url.pathname.endsWith('/events') ||
                              (url.pathname.endsWith('/entries') && url.searchParams.has('from') &&
                               !url.searchParams.has('to')),
                     (route) => route.abort());
    await openSheet(page, server, sheet);
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'theirs'});
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('mine');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#conflict-notice:not([hidden])');
    assert.match(await page.textContent('#conflict-notice'), /Another client changed the sheet/);
    await waitForCellText(page, 'A1', 'theirs');  // refreshed
    assert.equal(await cellValue(server, sheet, 'B1'), null);
    await page.unroute('**');
    await page.close();
  });

  test('inserts and deletes rows and columns', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'structure'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'top'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await page.click('.grid-cell[data-ref="A1"]');
    await page.click('button:has-text("Insert row above")');
    await waitUntil('A1 moved to A2', async () => (await cellValue(server, sheet, 'A2')) === 'top');
    await waitForCellText(page, 'A2', 'top');
    await page.click('button:has-text("Insert column left")');
    await waitUntil('A2 moved to B2', async () => (await cellValue(server, sheet, 'B2')) === 'top');
    await page.click('.grid-cell[data-ref="B2"]');
    await page.click('button:has-text("Delete row")');
    await waitUntil('row 2 deleted', async () => (await cellValue(server, sheet, 'B2')) === null);
    const types = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=2`)).body.entries
                      .map((e) => e.type).filter((t) => t !== 'Snapshot');
    assert.deepEqual(types, ['InsertRows', 'InsertColumns', 'DeleteRows']);
    await page.close();
  });

  test('time travel shows the old value, read-only, with the entry that changed it',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'history'});
    const old = await append(server, sheet, 'SetCell', {ref: 'A1', value: 'old'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'new'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'A1', 'new');
    await page.fill('.history-seq', String(old.seq));
    await page.press('.history-seq', 'Enter');
    await waitForCellText(page, 'A1', 'old');
    await page.waitForSelector('#history-banner:has-text("SetCell A1 = old")');
    assert.match(await page.textContent('#history-banner'), /Read-only/);
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-readonly'), 'true');
    assert.match(page.url(), new RegExp(`\\?at=${old.seq}$`));
    // Typing does not edit.
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('x');
    assert.equal(await page.locator('input.grid-editor').count(), 0);
    // The log's "View as of" opens the same view.
    await page.click('a.tab:has-text("Log")');
    await page.click(`tr[data-seq="${old.seq}"] a:has-text("View as of")`);
    await waitForCellText(page, 'A1', 'old');
    await page.click('#history-banner button:has-text("Back to live")');
    await waitForCellText(page, 'A1', 'new');
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-readonly'), 'false');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('the log pages entries with type, seq, size, storage and snapshot state', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'log', snapshot_every: 0});
    for (let i = 1; i <= 60; i++) await append(server, sheet, 'SetCell', {ref: `A${i}`, value: i});
    await append(server, sheet, 'Note', {text: 'x'.repeat(20000)});  // over the inline limit
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/log`);
    await page.waitForSelector('#log-table tr[data-seq="61"]');
    assert.match(await page.textContent('#log-table tr[data-seq="61"]'), /Note.*external/);
    assert.match(await page.textContent('#log-table tr[data-seq="60"]'), /SetCell.*inline.*SetCell A60 = 60/);
    await page.click('button:has-text("Oldest")');
    await page.waitForSelector('#log-table tr[data-seq="0"]');
    assert.match(await page.textContent('#log-table tr[data-seq="0"]'), /Snapshot\s*completed/);
    assert.equal(await page.locator('#log-table tr[data-seq="61"]').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('imports a CSV through the page and shows its cells', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'import'});
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/files`);
    await page.setInputFiles('#import-file', {
      name: 'fruit.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('name,qty,price\r\napple,3,1.25\r\npear,10,0.5\r\n'),
    });
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('.import-result:has-text("Imported as entry seq")');
    const progress = await page.$eval('progress[aria-label="Upload progress"]', (p) => [p.value, p.max]);
    assert.equal(progress[0], progress[1]);
    assert.equal(await cellValue(server, sheet, 'B2'), 3);
    await page.click('.import-result a:has-text("Open the grid")');
    await waitForCellText(page, 'A3', 'pear');
    await waitForCellText(page, 'C2', '1.25');
    await waitForCellText(page, 'B3', '10');
    // A file that does not parse is refused with nothing written.
    const next = (await api(server, 'GET', `/v1/sheets/${sheet}`)).body.next_seq;
    await page.click('a.tab:has-text("Import / export")');
    await page.setInputFiles('#import-file', {
      name: 'broken.csv', mimeType: 'text/csv', buffer: Buffer.from('a,"b\r\n'),
    });
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('.toast-error');
    assert.equal((await api(server, 'GET', `/v1/sheets/${sheet}`)).body.next_seq, next);
    await page.close();
  });

  test('export downloads a CSV and an XLSX that parse', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'export'});
    await append(server, sheet, 'SetCells', {at: 'A1', rows: [['x', 2], ['hello, "world"', true]]});
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/files`);
    const [csvDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
    assert.equal(csvDownload.suggestedFilename(), 'export.csv');
    const csv = readFileSync(await csvDownload.path(), 'utf8');
    assert.deepEqual(parseCsv(csv), [['x', '2'], ['hello, "world"', 'TRUE']]);

    const [xlsxDownload] = await Promise.all([page.waitForEvent('download'), page.click('#export-xlsx')]);
    const xlsxPath = path.join(screenshotDir, 'export.xlsx');
    await xlsxDownload.saveAs(xlsxPath);
    const read = execFileSync('/usr/bin/python3',  // Debian's, with python3-openpyxl
 ['-c', `
import json, sys, openpyxl
sheet = openpyxl.load_workbook(sys.argv[1]).active
print(json.dumps([[c.value for c in row] for row in sheet.iter_rows(min_row=1, max_row=2, max_col=2)]))
`, xlsxPath], {encoding: 'utf8'});
    assert.deepEqual(JSON.parse(read), [['x', 2], ['hello, "world"', true]]);
    await page.close();
  });

  test('blobs are browsed by prefix with sizes and tags', TEST_OPTIONS, async () => {
    const put = await fetch(`${server.url}/v1/blobs/reports/2026/q1.txt`, {method: 'PUT', body: 'hello blob'});
    assert.equal(put.status, 200);
    await fetch(`${server.url}/v1/blobs/reports/2026/q1.txt?tagging`,
                {method: 'PUT', body: JSON.stringify({tags: {team: 'finance'}})});
    const page = await browser.page();
    await page.goto(`${server.url}/console/blobs`);
    await page.click('#blobs-table a:has-text("reports/")');
    await page.click('#blobs-table a:has-text("2026/")');
    await page.waitForSelector('#blobs-table tr:has-text("q1.txt")');
    const row = await page.textContent('#blobs-table tr:has-text("q1.txt")');
    assert.match(row, /10 B/);
    assert.match(row, /team=finance/);
    const [download] = await Promise.all([page.waitForEvent('download'),
                                          page.click('button[aria-label="Download reports/2026/q1.txt"]')]);
    assert.equal(readFileSync(await download.path(), 'utf8'), 'hello blob');
    await page.close();
  });

  test('shows the cost of a sheet', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'cost'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 1});
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/cost`);
    await page.waitForSelector('#cost-requests');
    assert.match(await page.textContent('.cost'), /Write units/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('screenshots of the grid and the pipeline', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'Budget 2026'});
    await append(server, sheet, 'SetCells', {at: 'A1', rows: [
      ['Item', 'Q1', 'Q2', 'Q3', 'Q4', 'Total', 'Share'],
      ['Rent', 3600, 3600, 3600, 3600, '=SUM(B2:E2)', '=F2/F7'],
      ['Payroll', 21400, 21950, 22300, 23100, '=SUM(B3:E3)', '=F3/F7'],
      ['Hosting', 812.4, 790.15, 845, 901.6, '=SUM(B4:E4)', '=F4/F7'],
      ['Travel', 1250, 430, 2210, 980, '=SUM(B5:E5)', '=F5/F7'],
      ['Training', 0, 1500, 0, 750, '=SUM(B6:E6)', '=F6/F7'],
      ['Total', '=SUM(B2:B6)', '=SUM(C2:C6)', '=SUM(D2:D6)', '=SUM(E2:E6)', '=SUM(F2:F6)', null],
      [], ['Approved', true], ['Owner', 'finance@example.com'],
    ]});
    for (const ref of ['G2', 'G3', 'G4', 'G5', 'G6']) {
      await append(server, sheet, 'SetCell', {ref, value: `=F${ref.slice(1)}/F7`, format: '0.0%'});
    }
    await append(server, sheet, 'SetCell', {ref: 'B2', value: 3600, format: '#,##0.00'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await page.click('.grid-cell[data-ref="B3"]');
    await waitForCellText(page, 'A10', 'Owner');
    await page.screenshot({path: path.join(screenshotDir, 'console-grid.png')});

    await page.goto(`${server.url}/console/pipeline`);
    await page.waitForSelector('#queues-table');
    await page.waitForSelector('#feed-table');
    await page.waitForFunction(() => document.querySelectorAll('.chart-value')[1].textContent !== '—');
    await page.screenshot({path: path.join(screenshotDir, 'console-pipeline.png')});
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

// Seed 000's failure path end to end: every build of one snapshot fails until its
// message is dead-lettered, and the pipeline page redrives it.
describe('console pipeline', () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer(['--clock', 'manual', '--enable-faults']);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  async function metrics() {
    return (await api(server, 'GET', '/metrics')).body;
  }

  async function workerFailures() {
    const match = /sheetlog_function_failures\{mapping="snapshot-worker"\} (\d+)/.exec(await metrics());
    return match ? Number(match[1]) : 0;
  }

  // Moves the manual clock only while no handler runs (as tests/support's
  // AdvanceClockWhenIdle): moving it under a running handler can pass its visibility
  // timeout and dead-letter work that was only slow.
  async function advanceClockWhenIdle(seconds) {
    const running = [...(await metrics()).matchAll(/^sheetlog_function_running\{[^}]*\} (\S+)$/gm)];
    if (running.some((m) => Number(m[1]) !== 0)) return false;
    return (await api(server, 'POST', '/v1/admin/clock', {advance_s: seconds})).status === 200;
  }

  async function snapshotsQueue() {
    const queues = (await api(server, 'GET', '/v1/admin/queues')).body.queues;
    return queues.find((q) => q.name === 'snapshots');
  }

  test('a dead-lettered snapshot message is redriven from the page', TEST_OPTIONS, async () => {
    const armed = await api(server, 'POST', '/v1/admin/faults',
                            {point: 'snapshot.before_complete', count: -1});
    assert.equal(armed.status, 200);
    const failuresBefore = await workerFailures();
    const sheet = await createSheet(server, {name: 'poison', snapshot_every: 0});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 1});
    assert.equal((await api(server, 'POST', `/v1/sheets/${sheet}/snapshots`, {})).status, 201);
    for (let failures = 1; failures <= 10; failures++) {
      await waitUntil(`snapshot failure ${failures}`,
                      async () => (await workerFailures()) >= failuresBefore + failures);
      await waitUntil('an idle moment to move the clock', () => advanceClockWhenIdle(61));
    }
    await waitUntil('one dead letter', async () => (await snapshotsQueue()).dead_letter_depth === 1);
    assert.equal((await api(server, 'DELETE', '/v1/admin/faults')).status, 204);

    const page = await browser.page();
    await page.goto(`${server.url}/console/pipeline`);
    await page.waitForSelector('#queues-table tr[data-queue="snapshots"] .dead-letter-depth:has-text("1")');
    await page.waitForSelector('#jobs-table:has-text("snapshot.before_complete")');
    await page.click('button[aria-label="Show dead letters of snapshots"]');
    await page.waitForSelector('#dead-letter-table');
    assert.match(await page.textContent('#dead-letter-table'), new RegExp(sheet));
    await page.click('button[aria-label="Redrive snapshots"]');
    await waitUntil('the dead letter is redriven', async () => (await snapshotsQueue()).dead_letter_depth === 0);
    await page.waitForSelector('#queues-table tr[data-queue="snapshots"] .dead-letter-depth:has-text("0")');
    // With the fault gone, the redriven message builds the snapshot.
    await waitUntil('the snapshot completes', async () => {
      const list = (await api(server, 'GET', `/v1/sheets/${sheet}/snapshots`)).body.snapshots;
      if (list.every((s) => s.state === 'completed')) return true;
      await advanceClockWhenIdle(61);
      return false;
    });
    // Verify from the page: no violations.
    await page.click('button:has-text("Run verify")');
    await page.waitForSelector('.badge:has-text("OK: no violations")');
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe('console with --token', () => {
  const token = 'console-test-token';
  let server;
  let browser;

  before(async () => {
    server = await startServer(['--clock', 'manual', '--token', token]);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
  });

  test('asks for the token, works after it is entered, and loads nothing without it',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'guarded'}, {token});
    // The console's own files need no token; the API does.
    assert.equal((await api(server, 'GET', '/console/')).status, 200);
    assert.equal((await api(server, 'GET', '/v1/sheets')).status, 401);

    const page = await browser.page();
    await page.goto(`${server.url}/console/`);
    await page.waitForSelector('#token-input');
    assert.equal(await page.locator(`tr[data-sheet="${sheet}"]`).count(), 0);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('sheetlog.token')), null);

    await page.fill('#token-input', 'wrong');
    await page.click('dialog.modal button:has-text("Sign in")');
    await page.waitForSelector('dialog.modal:has-text("not accepted") #token-input');
    assert.equal(await page.locator(`tr[data-sheet="${sheet}"]`).count(), 0);

    await page.fill('#token-input', token);
    await page.click('dialog.modal button:has-text("Sign in")');
    await page.waitForSelector(`tr[data-sheet="${sheet}"]`);

    // Editing works with the token, and a reload of the tab keeps it (sessionStorage).
    await page.click(`tr[data-sheet="${sheet}"] a`);
    await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-loading)');
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.type('signed in');
    await page.keyboard.press('Enter');
    await waitUntil('A1 set', async () => (await cellValue(server, sheet, 'A1', {token})) === 'signed in');
    await page.reload();
    await waitForCellText(page, 'A1', 'signed in');
    assert.equal(await page.locator('#token-input').count(), 0);
    await page.close();

    // A new tab starts without it.
    const fresh = await browser.page();
    await fresh.goto(`${server.url}/console/sheets/${sheet}`);
    await fresh.waitForSelector('#token-input');
    assert.equal(await fresh.locator('.grid-cell[data-ref="A1"]').count(), 0);
    await fresh.close();
  });
});
