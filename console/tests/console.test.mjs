// Browser tests of the web console: Debian's chromium, driven by playwright-core,
// against the real sheetlog binary over loopback HTTP.
// Servers run with --clock manual; every wait is for a condition (DOM state or a server
// answer), never for time. One server and one browser serve most tests (each test makes
// its own sheets); a phone-sized browser and a server with a token have their own.
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {mkdirSync, readFileSync} from 'node:fs';
import path from 'node:path';
import {after, before, describe, test} from 'node:test';

import {api, append, cellValue, createSheet, launchBrowser, screenshotDir, startServer,
        waitForCellText, waitUntil, WAIT_TIMEOUT_MS} from './harness.mjs';

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

// The element that has the keyboard focus: its id, else its aria-label, else its text.
async function focused(page) {
  return page.evaluate(() => {
    const e = document.activeElement;
    return e.id || e.getAttribute('aria-label') || e.textContent.trim().slice(0, 40);
  });
}

async function nextSeq(server, sheet) {
  return (await api(server, 'GET', `/v1/sheets/${sheet}`)).body.next_seq;
}

// Keeps the page from learning of other clients' entries: its event stream and its
// polling fail (a conflict is then the page's only way to find out).
async function blockLiveUpdates(page) {
  await page.route((url) => url.pathname.endsWith('/events') ||
                            (url.pathname.endsWith('/entries') && url.searchParams.has('from') &&
                             !url.searchParams.has('to')),
                   (route) => route.abort());
}

// Waits until the page's header shows `seq` as the next seq (it has seen the entry
// before it).
async function waitForNextSeq(page, seq) {
  await page.waitForFunction((s) => document.querySelector('#next-seq')?.textContent ===
                                    s.toLocaleString('en-US'), seq, {timeout: WAIT_TIMEOUT_MS});
}

async function appendRaw(server, sheet, entry) {
  const response = await api(server, 'POST', `/v1/sheets/${sheet}/entries`, entry);
  if (response.status !== 201) throw new Error(`append: ${JSON.stringify(response.body)}`);
  return response.body;
}

// Waits until cell `ref` shows `text` as the server's value (not the page's own value on
// its way, nor one saved but not read back yet).
async function settled(page, ref, text) {
  await page.waitForFunction(([r, t]) => {
    const cell = document.querySelector(`.grid-cell[data-ref="${r}"]`);
    return cell && cell.textContent === t &&
           !/grid-(saved|pending|failed|conflict)/.test(cell.className);
  }, [ref, text], {timeout: WAIT_TIMEOUT_MS});
}

describe('console', () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer(['--clock', 'manual', '--enable-faults', '--allow-reset']);
    browser = await launchBrowser({permissions: ['clipboard-read', 'clipboard-write']});
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
                         '/console/pipeline', '/console/tables/entry']) {
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

  test('the sheets page creates with labelled fields, searches and sorts', TEST_OPTIONS, async () => {
    const page = await browser.page();
    await page.goto(`${server.url}/console/`);
    // Fields have visible labels, not only placeholders.
    await page.getByLabel('New sheet name').fill('from the console');
    await page.getByLabel('Snapshot every N entries').fill('0');
    await page.click('button:has-text("Create sheet")');
    await page.waitForURL(/\/console\/sheets\/[0-9a-f-]{36}$/);
    const id = page.url().split('/').pop();
    const sheet = await api(server, 'GET', `/v1/sheets/${id}`);
    assert.equal(sheet.status, 200);
    assert.equal(sheet.body.name, 'from the console');
    assert.equal(sheet.body.snapshot_every, 0);
    await page.waitForSelector('h1:has-text("from the console")');
    const zebra = await createSheet(server, {name: 'zebra sheet'});
    const apple = await createSheet(server, {name: 'Apple sheet'});
    await append(server, zebra, 'SetCell', {ref: 'A1', value: 1});
    await append(server, zebra, 'SetCell', {ref: 'A2', value: 2});
    // Back on the list, it is there with its next seq.
    await page.click('a.nav-link[data-section="sheets"]');
    await page.waitForSelector(`tr[data-sheet="${id}"] td.num:has-text("1")`);
    await page.waitForSelector(`tr[data-sheet="${zebra}"] td.num:has-text("3")`);
    const order = () => page.$$eval('#sheets-table tbody tr', (rows) => rows.map((r) => r.dataset.sheet));
    // By name, A to Z (then Z to A); by size, largest first.
    await page.click('#sheets-table th:has-text("Name") button');
    assert.equal(await page.getAttribute('#sheets-table th:has-text("Name")', 'aria-sort'), 'ascending');
    const byName = await order();
    assert.ok(byName.indexOf(apple) < byName.indexOf(zebra));
    await page.click('#sheets-table th:has-text("Name") button');
    assert.equal(await page.getAttribute('#sheets-table th:has-text("Name")', 'aria-sort'), 'descending');
    const reversed = await order();
    assert.ok(reversed.indexOf(zebra) < reversed.indexOf(apple));
    await page.click('#sheets-table th:has-text("Next seq") button');
    assert.equal((await order())[0], zebra);
    await page.getByLabel('Search').fill('zebra');
    await page.waitForFunction(() => document.querySelectorAll('#sheets-table tbody tr').length === 1);
    assert.deepEqual(await order(), [zebra]);
    await page.getByLabel('Search').fill(apple.slice(0, 8));
    await page.waitForFunction((a) => document.querySelector('#sheets-table tbody tr')?.dataset.sheet === a, apple);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('deletes a sheet after a confirmation, and its open page says it is gone', TEST_OPTIONS, async () => {
    const id = await createSheet(server, {name: 'doomed'});
    const open = await browser.page();
    await openSheet(open, server, id);
    await open.waitForSelector('#live-state[data-transport="stream"]');
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
    // The page that had it open says so, rather than "connecting" for good.
    await open.waitForSelector('#sheet-gone');
    assert.equal(await open.textContent('.live-label'), 'sheet deleted');
    await open.reload();
    await open.waitForSelector('.notice-error:has-text("was deleted or never existed")');
    assert.equal(await open.textContent('.live-label'), 'no such sheet');
    await page.close();
    await open.close();
  });

  test('typing, the keyboard and the mouse edit cells; no-op edits append nothing', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'typing'});
    await append(server, sheet, 'SetCell', {ref: 'A3', value: 'old text'});
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
    const before = await nextSeq(server, sheet);
    await page.keyboard.type('never');
    await page.waitForSelector('.grid-input.grid-editing');
    await page.keyboard.press('Escape');
    await page.waitForSelector('.grid-input.grid-editing', {state: 'detached'}).catch(() => {});
    assert.equal(await page.locator('.grid-input.grid-editing').count(), 0);
    assert.equal(await activeRef(page), 'B3');
    // Tab while editing commits and moves right.
    await page.keyboard.press('ArrowRight');
    await page.keyboard.type('=B2*2');
    await page.keyboard.press('Tab');
    await waitUntil('C3 holds the formula', async () => (await cellValue(server, sheet, 'C3')) === '=B2*2');
    assert.equal(await activeRef(page), 'D3');
    let entries = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=${before}`)).body.entries;
    assert.deepEqual(entries.map((e) => [e.type, e.body.ref]), [['SetCell', 'C3']]);

    // A double click opens the in-cell editor on the cell's content.
    await page.dblclick('.grid-cell[data-ref="A3"]');
    await page.waitForSelector('.grid-input.grid-editing');
    assert.equal(await page.inputValue('.grid-input'), 'old text');
    await page.keyboard.type(', new');
    await page.keyboard.press('Enter');
    await waitUntil('A3 edited', async () => (await cellValue(server, sheet, 'A3')) === 'old text, new');

    // Text that arrives without a keydown (an IME, a dead key, text inserted by
    // assistive technology) starts the edit with all of it.
    await page.click('.grid-cell[data-ref="B5"]');
    await page.keyboard.type('ünïcödé');  // ü and the others come as input events only
    await page.keyboard.press('Enter');
    await waitUntil('B5 = ünïcödé', async () => (await cellValue(server, sheet, 'B5')) === 'ünïcödé');
    await page.click('.grid-cell[data-ref="B6"]');
    await page.keyboard.insertText('日本語');
    await page.keyboard.press('Enter');
    await waitUntil('B6 = 日本語', async () => (await cellValue(server, sheet, 'B6')) === '日本語');

    // No-op edits: re-saving a value, deleting an empty cell.
    const quiet = await nextSeq(server, sheet);
    await page.click('.grid-cell[data-ref="B2"]');
    await page.keyboard.press('F2');
    await page.keyboard.press('Enter');
    await page.click('.grid-cell[data-ref="F9"]');
    await page.keyboard.press('Delete');
    await page.click('.grid-cell[data-ref="B2"]');
    await page.keyboard.type('42');
    await page.keyboard.press('Enter');
    // Then a real one: it is the only entry appended.
    await page.click('.grid-cell[data-ref="B5"]');
    await page.keyboard.press('Delete');
    await waitUntil('B5 cleared', async () => (await cellValue(server, sheet, 'B5')) === null);
    entries = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=${quiet}`)).body.entries;
    assert.deepEqual(entries.map((e) => [e.type, e.body.ref, e.body.value]), [['SetCell', 'B5', null]]);

    await page.reload();
    await waitForCellText(page, 'B2', '42');
    await waitForCellText(page, 'C3', '84');  // the formula's value; the bar shows =B2*2
    await waitForCellText(page, 'B6', '日本語');
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-rowcount'), '1048577');
    assert.ok(await page.locator('[role="gridcell"][data-ref="B2"]').count() === 1);
    assert.ok(await page.locator('[role="columnheader"]:has-text("B")').count() >= 1);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('a keyboard alone reaches the toolbar from the grid and back (no trap)', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'keyboard'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await page.waitForFunction(() => document.activeElement?.classList.contains('grid-input'));
    // Escape outside an edit goes to the go-to box; typing a cell there goes to it.
    await page.keyboard.press('Escape');
    assert.equal(await focused(page), 'goto-cell');
    await page.keyboard.type('C7');
    await page.keyboard.press('Enter');
    assert.equal(await activeRef(page), 'C7');
    await page.waitForFunction(() => document.activeElement?.classList.contains('grid-input'));
    // Shift+Tab leaves the grid backwards (the history bar comes before it)...
    await page.keyboard.press('Shift+Tab');
    assert.notEqual(await focused(page), 'Cell C7');
    assert.equal(await page.evaluate(() => document.activeElement.closest('[role="grid"]')), null);
    // ...and Tab forwards from the grid leaves it too.
    await page.click('.grid-cell[data-ref="D2"]');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.closest('[role="grid"]')), null);
    // The toolbar's controls are reachable and work: the formula bar edits the cell.
    await page.click('.grid-cell[data-ref="D2"]');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'formula-input');
    await page.keyboard.type('from the bar');
    await page.keyboard.press('Enter');
    await waitUntil('D2 set from the formula bar', async () => (await cellValue(server, sheet, 'D2')) === 'from the bar');
    await page.close();
  });

  test('a live update does not wipe what is being typed in the formula bar or go-to box', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'typing while live'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await page.waitForSelector('#live-state[data-transport="stream"]');
    await page.click('.grid-cell[data-ref="A1"]');
    await page.click('#formula-input');
    await page.keyboard.type('half typed');
    let seq = (await append(server, sheet, 'SetCell', {ref: 'A1', value: 'theirs'})).seq;
    await waitForNextSeq(page, seq + 1);
    await waitForCellText(page, 'A1', 'theirs');
    assert.equal(await page.inputValue('#formula-input'), 'half typed');
    await page.keyboard.type(' and done');
    assert.equal(await page.inputValue('#formula-input'), 'half typed and done');
    await page.keyboard.press('Escape');
    // The go-to box likewise: the jump goes where the user typed, not to the old target.
    await page.click('#goto-cell');
    await page.fill('#goto-cell', 'E12');
    seq = (await append(server, sheet, 'SetCell', {ref: 'B1', value: 'more'})).seq;
    await waitForNextSeq(page, seq + 1);
    await waitForCellText(page, 'B1', 'more');
    assert.equal(await page.inputValue('#goto-cell'), 'E12');
    await page.press('#goto-cell', 'Enter');
    assert.equal(await activeRef(page), 'E12');
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

  test('when the event stream is blocked (a proxy), the page polls instead', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'blocked stream'});
    const page = await browser.page();
    await page.route((url) => url.pathname.endsWith('/events'), (route) => route.abort());
    await openSheet(page, server, sheet);
    await page.waitForSelector('#live-state[data-transport="polling"]');
    assert.match(await page.textContent('#live-state'), /polling/);
    await append(server, sheet, 'SetCell', {ref: 'D4', value: 'polled'});
    await waitForCellText(page, 'D4', 'polled');
    await page.close();
  });

  test('concurrent edits are judged per cell: other cells retry, the same cell shows both values',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'conflict'});
    await append(server, sheet, 'SetCells', {cells: {G2: 1, G5: 'base'}});
    const page = await browser.page();
    await blockLiveUpdates(page);
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'G5', 'base');

    // Someone changed G2; an edit of G3 is not about G2: it goes through by itself.
    await append(server, sheet, 'SetCell', {ref: 'G2', value: 2});
    await page.click('.grid-cell[data-ref="G3"]');
    await page.keyboard.type('mine3');
    await page.keyboard.press('Enter');
    await waitUntil('G3 applied', async () => (await cellValue(server, sheet, 'G3')) === 'mine3');
    assert.equal(await page.locator('.conflict-notice').count(), 0);
    assert.equal(await cellValue(server, sheet, 'G2'), 2, 'their G2 stays');
    // The page has read the sheet back after its edit (what it shows next is as of then).
    await settled(page, 'G3', 'mine3');

    // Someone set G5 meanwhile: the edit waits, showing both values.
    await append(server, sheet, 'SetCell', {ref: 'G5', value: 'theirs'});
    await page.click('.grid-cell[data-ref="G5"]');
    await page.keyboard.type('mine5');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.conflict-notice');
    assert.equal(await page.textContent('.conflict-notice code.theirs'), 'theirs');
    assert.equal(await page.textContent('.conflict-notice code.yours'), 'mine5');
    assert.equal(await cellValue(server, sheet, 'G5'), 'theirs', 'theirs is not overwritten');
    assert.match(await page.getAttribute('.grid-cell[data-ref="G5"]', 'class'), /grid-conflict/);
    await page.click('.conflict-notice button:has-text("Use mine")');
    await waitUntil('mine applied over theirs', async () => (await cellValue(server, sheet, 'G5')) === 'mine5');
    await page.waitForSelector('.conflict-notice', {state: 'detached'});
    await settled(page, 'G5', 'mine5');

    // Again, and this time theirs is kept.
    await append(server, sheet, 'SetCell', {ref: 'G5', value: 'theirs again'});
    await page.click('.grid-cell[data-ref="G5"]');
    await page.keyboard.type('mine6');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.conflict-notice');
    await page.click('.conflict-notice button:has-text("Keep theirs")');
    await waitForCellText(page, 'G5', 'theirs again');
    assert.equal(await cellValue(server, sheet, 'G5'), 'theirs again');
    await page.unroute('**');
    await page.close();

    // With live updates on: an edit begun before their value arrived still conflicts
    // (it was typed over the old value), rather than overwriting theirs silently.
    const live = await browser.page();
    await openSheet(live, server, sheet);
    await live.waitForSelector('#live-state[data-transport="stream"]');
    await waitForCellText(live, 'G5', 'theirs again');
    await live.click('.grid-cell[data-ref="G5"]');
    await live.keyboard.type('typed over');
    const seq = (await append(server, sheet, 'SetCell', {ref: 'G5', value: 'arrived meanwhile'})).seq;
    await waitForNextSeq(live, seq + 1);
    await live.keyboard.press('Enter');
    await live.waitForSelector('.conflict-notice');
    assert.equal(await live.textContent('.conflict-notice code.theirs'), 'arrived meanwhile');
    assert.equal(await cellValue(server, sheet, 'G5'), 'arrived meanwhile');
    assert.deepEqual(live.errors, []);
    await live.close();
  });

  test('an edit the server did not get stays, marked, and is sent when the server answers again',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'offline'});
    const page = await browser.page();
    // The server "goes down" for appends: the network fails them.
    const down = (route) => (route.request().method() === 'POST' ? route.abort('connectionrefused')
                                                                  : route.fallback());
    await page.route('**/v1/sheets/*/entries', down);
    await openSheet(page, server, sheet);
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.type('typed offline');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#unsaved-notice');
    await page.waitForSelector('.grid-cell[data-ref="A1"].grid-failed');
    assert.equal(await page.textContent('.grid-cell[data-ref="A1"]'), 'typed offline');
    assert.equal(await cellValue(server, sheet, 'A1'), null);
    // A reload keeps it (it waits in the tab's storage) and still shows it as not saved.
    await page.reload();
    await page.waitForSelector('.grid-cell[data-ref="A1"].grid-failed');
    assert.equal(await page.textContent('.grid-cell[data-ref="A1"]'), 'typed offline');
    // The server is back: the edit goes through by itself, and the mark goes.
    await page.unroute('**/v1/sheets/*/entries', down);
    await waitUntil('A1 saved', async () => (await cellValue(server, sheet, 'A1')) === 'typed offline');
    await page.waitForSelector('#unsaved-notice', {state: 'detached'});
    await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-failed):not(.grid-pending)');
    assert.equal(await page.textContent('.grid-cell[data-ref="A1"]'), 'typed offline');
    assert.equal((await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=1`)).body.entries.length, 1,
                 'appended once');
    await page.close();
  });

  // Issue 35: Ctrl+Z reached the grid's hidden input, whose native undo fired `input`
  // and started a typed edit with an empty value: Enter then appended `SetCell B5 = null`.
  test('native undo in the grid never edits a cell (Ctrl+Z, or an undo command)', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'native undo'});
    await append(server, sheet, 'SetCell', {ref: 'B5', value: 45});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'B5', '45');
    // The input has an undo history of its own: something was typed in it before.
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.type('x');
    await page.keyboard.press('Enter');
    await waitUntil('A1 = x', async () => (await cellValue(server, sheet, 'A1')) === 'x');
    await settled(page, 'A1', 'x');
    const before = await nextSeq(server, sheet);
    await page.click('.grid-cell[data-ref="B5"]');
    await page.keyboard.press('Control+Z');
    await page.keyboard.press('Enter');
    await page.click('.grid-cell[data-ref="C9"]');
    // The browser's own undo command (the context menu's, the Edit menu's) likewise.
    await page.click('.grid-cell[data-ref="B5"]');
    await page.evaluate(() => document.execCommand('undo'));
    await page.evaluate(() => document.execCommand('undo'));
    await page.keyboard.press('Enter');
    await page.click('.grid-cell[data-ref="C9"]');
    await page.click('.grid-cell[data-ref="B5"]');
    await page.keyboard.press('Tab');
    // Whatever was appended since (the page's undo of its own A1, at most), none of it
    // touched B5.
    await waitUntil('the page is idle', () => page.evaluate(() =>
      !document.querySelector('.grid-pending, .grid-saved, .grid-input.grid-editing')));
    const entries = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=${before}`)).body.entries;
    assert.deepEqual(entries.filter((e) => JSON.stringify(e.body).includes('B5')), []);
    assert.equal(await cellValue(server, sheet, 'B5'), 45);
    await waitForCellText(page, 'B5', '45');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test("undo and redo revert the page's own edits, a paste as one step, never another client's",
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'undo redo'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'base'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'A1', 'base');
    const values = async (range) =>
      (await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=${range}`)).body.rows;
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.type('one');
    await page.keyboard.press('Enter');
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('two');
    await page.keyboard.press('Enter');
    await page.evaluate(() => navigator.clipboard.writeText('p\tq\r\nr\ts\r\n'));
    await page.click('.grid-cell[data-ref="D1"]');
    await page.keyboard.press('Control+V');
    await waitUntil('all three saved', async () =>
      JSON.stringify(await values('A1:E2')) === JSON.stringify([['one', 'two', null, 'p', 'q'],
                                                                [null, null, null, 'r', 's']]));
    await page.waitForSelector('#undo:not([disabled])');
    assert.equal(await page.getAttribute('#redo', 'disabled'), '');

    // Ctrl+Z: the paste goes, in one entry.
    let seq = await nextSeq(server, sheet);
    await page.keyboard.press('Control+Z');
    await waitUntil('the paste undone', async () =>
      JSON.stringify(await values('D1:E2')) === JSON.stringify([[null, null], [null, null]]));
    assert.equal(await nextSeq(server, sheet), seq + 1, 'one entry');
    await page.waitForSelector('#redo:not([disabled])');
    // Ctrl+Z again, then the toolbar's Undo: B1, then A1 go back to what they held.
    await page.keyboard.press('Control+Z');
    await waitUntil('B1 undone', async () => (await cellValue(server, sheet, 'B1')) === null);
    await page.click('#undo');
    await waitUntil('A1 undone', async () => (await cellValue(server, sheet, 'A1')) === 'base');
    await page.waitForSelector('#undo[disabled]');
    // Redo: Ctrl+Y, Ctrl+Shift+Z, the toolbar's Redo.
    await page.click('.grid-cell[data-ref="H9"]');
    await page.keyboard.press('Control+Y');
    await waitUntil('A1 redone', async () => (await cellValue(server, sheet, 'A1')) === 'one');
    await page.keyboard.press('Control+Shift+Z');
    await waitUntil('B1 redone', async () => (await cellValue(server, sheet, 'B1')) === 'two');
    await page.click('#redo');
    await waitUntil('the paste redone', async () =>
      JSON.stringify(await values('D1:E2')) === JSON.stringify([['p', 'q'], ['r', 's']]));
    await page.waitForSelector('#redo[disabled]');

    // Someone else changes B1: undoing the page's B1 says so and leaves theirs.
    await page.keyboard.press('Control+Z');  // the paste
    await waitUntil('the paste undone again', async () => (await cellValue(server, sheet, 'D1')) === null);
    seq = (await append(server, sheet, 'SetCell', {ref: 'B1', value: 'theirs'})).seq;
    await waitForNextSeq(page, seq + 1);
    await waitForCellText(page, 'B1', 'theirs');
    await page.click('.grid-cell[data-ref="H9"]');
    await page.keyboard.press('Control+Z');
    await page.waitForSelector('.toast:has-text("B1")');
    assert.match(await page.textContent('.toast:has-text("B1")'), /another client/);
    assert.equal(await cellValue(server, sheet, 'B1'), 'theirs');
    // The next undo goes on to A1.
    await page.keyboard.press('Control+Z');
    await waitUntil('A1 undone again', async () => (await cellValue(server, sheet, 'A1')) === 'base');
    assert.equal(await cellValue(server, sheet, 'B1'), 'theirs');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('typing fast in several cells chains expect_seq: no 409', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'fast typing'});
    const page = await browser.page();
    const statuses = [];
    page.on('response', (response) => {
      const request = response.request();
      if (request.method() === 'POST' && new URL(response.url()).pathname.endsWith('/entries')) {
        statuses.push(response.status());
      }
    });
    await openSheet(page, server, sheet);
    await page.click('.grid-cell[data-ref="A1"]');
    for (let i = 1; i <= 5; i++) {
      await page.keyboard.type(`v${i}`);
      await page.keyboard.press('Tab');
    }
    await waitUntil('E1 saved', async () => (await cellValue(server, sheet, 'E1')) === 'v5');
    // The page hears the last response after the server has stored it: wait for all five.
    await waitUntil('five responses', async () => statuses.length >= 5);
    assert.deepEqual((await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=A1:E1`)).body.rows,
                     [['v1', 'v2', 'v3', 'v4', 'v5']]);
    assert.deepEqual(statuses, [201, 201, 201, 201, 201]);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('viewing the past: the header names the seq, every write is refused, the head is live',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'past view'});
    const old = await append(server, sheet, 'SetCell', {ref: 'A1', value: 'old'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'new'});
    const last = await append(server, sheet, 'SetCell', {ref: 'A2', value: 'newer'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'A2', 'newer');
    await page.waitForSelector('#live-state[data-transport="stream"]');
    await page.getByLabel('Seq', {exact: true}).fill(String(old.seq));
    await page.getByLabel('Seq', {exact: true}).press('Enter');
    await waitForCellText(page, 'A1', 'old');
    // The header says which seq is shown, not "live".
    await page.waitForSelector(`#live-state:has-text("seq ${old.seq}")`);
    assert.doesNotMatch(await page.textContent('#live-state'), /^live/);
    const head = await nextSeq(server, sheet);
    // Every write is refused, visibly.
    const refusals = () => page.locator('.toast:has-text("Read-only")').count();
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('x');
    await waitUntil('typing refused', async () => (await refusals()) >= 1);
    assert.equal(await page.locator('.grid-input.grid-editing').count(), 0);
    await page.evaluate(() => document.querySelectorAll('.toast').forEach((t) => t.remove()));
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.press('Delete');
    await waitUntil('Delete refused', async () => (await refusals()) >= 1);
    await page.evaluate(() => document.querySelectorAll('.toast').forEach((t) => t.remove()));
    await page.evaluate(() => navigator.clipboard.writeText('pasted'));
    await page.keyboard.press('Control+V');
    await waitUntil('paste refused', async () => (await refusals()) >= 1);
    await page.evaluate(() => document.querySelectorAll('.toast').forEach((t) => t.remove()));
    await page.keyboard.press('Control+Z');
    await waitUntil('undo refused', async () => (await refusals()) >= 1);
    assert.equal(await page.getAttribute('#undo', 'disabled'), '');
    assert.equal(await page.getAttribute('#redo', 'disabled'), '');
    assert.equal(await page.getAttribute('#snapshot-now', 'disabled'), '');
    assert.equal(await page.locator('#structure-menu button:not([disabled])').count(), 0);
    assert.equal(await page.getAttribute('#formula-input', 'readonly'), '');
    // Import, on its tab, too: the view of the past goes along.
    await page.click('a.tab:has-text("Import / export")');
    await page.waitForSelector(`.notice:has-text("seq ${old.seq}")`);
    await page.waitForSelector(`#live-state:has-text("seq ${old.seq}")`);
    assert.equal(await page.getAttribute('button:has-text("Upload and import")', 'disabled'), '');
    await page.click('a.tab:has-text("Grid")');
    await waitForCellText(page, 'A1', 'old');
    assert.equal(await nextSeq(server, sheet), head, 'nothing was written');
    // The slider dragged to the head: live again, writable, the header says live.
    await page.locator('.history-slider').fill(String(last.seq));
    await page.waitForFunction(() => document.querySelector('[role="grid"]').getAttribute('aria-readonly') === 'false');
    await waitForCellText(page, 'A1', 'new');
    await page.waitForSelector('#live-state:has-text("live")');
    assert.doesNotMatch(await page.textContent('#live-state'), /seq/);
    assert.equal(await page.isHidden('#history-banner'), true);
    assert.equal(await page.isHidden('#back-to-live'), true);
    assert.doesNotMatch(page.url(), /at=/);
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('written');
    await page.keyboard.press('Enter');
    await waitUntil('B1 written', async () => (await cellValue(server, sheet, 'B1')) === 'written');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('selects ranges, copies and pastes tab-separated text, and Ctrl+arrows go to the data edge',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'clipboard'});
    await append(server, sheet, 'SetCells', {at: 'A1', rows: [['a', 'b'], [1, 2], ['x\ty', 'q"z']]});
    await append(server, sheet, 'SetCell', {ref: 'A10', value: 'far'});
    await append(server, sheet, 'SetCell', {ref: 'F2', value: 'right'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'B3', 'q"z');
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowRight');
    assert.equal(await page.locator('.grid-cell[aria-selected="true"]').count(), 6);
    await page.keyboard.press('Control+C');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()),
                 'a\tb\n1\t2\n"x\ty"\t"q""z"');
    // A range copied from another spreadsheet (with a quoted line break) pastes as one entry.
    await page.evaluate(() => navigator.clipboard.writeText('p\t3\r\n"two\nlines"\tTRUE\r\n'));
    await page.click('.grid-cell[data-ref="D5"]');
    const before = await nextSeq(server, sheet);
    await page.keyboard.press('Control+V');
    await waitUntil('pasted', async () => (await cellValue(server, sheet, 'E6')) === true);
    const cells = (await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=D5:E6`)).body.rows;
    assert.deepEqual(cells, [['p', 3], ['two\nlines', true]]);
    assert.equal(await nextSeq(server, sheet), before + 1);
    // Ctrl+Down: to the end of the filled run, then the next filled cell, then the grid's end.
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.press('Control+ArrowDown');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'A3');
    await page.keyboard.press('Control+ArrowDown');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'A10');
    await page.keyboard.press('Control+ArrowDown');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'A1048576');
    await page.keyboard.press('Control+ArrowUp');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'A10');
    await page.keyboard.press('Control+Home');
    assert.equal(await activeRef(page), 'A1');
    await page.keyboard.press('Control+ArrowRight');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'B1');
    // Ctrl+End: the last used cell (row 10, column F).
    await page.keyboard.press('Control+End');
    await page.waitForFunction(() => document.querySelector('#goto-cell').value === 'F10');
    // Delete clears the selection's filled cells in one entry.
    await page.click('.grid-cell[data-ref="D5"]');
    await page.click('.grid-cell[data-ref="E6"]', {modifiers: ['Shift']});
    await page.keyboard.press('Delete');
    await waitUntil('cleared', async () => (await cellValue(server, sheet, 'E6')) === null);
    assert.deepEqual((await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=D5:E6`)).body.rows,
                     [[null, null], [null, null]]);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('underscores are visible in the go-to box and the formula bar at 1x', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'under_score'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    for (const input of ['#goto-cell', '#formula-input']) {
      // No caret in the pictures (the page's CSP refuses a <style>; CSSOM is allowed).
      await page.$eval(input, (e) => { e.style.caretColor = 'transparent'; });
      await page.fill(input, '   ');
      const blank = await page.locator(input).screenshot();
      await page.fill(input, '___');
      const underscores = await page.locator(input).screenshot();
      assert.ok(!blank.equals(underscores), `${input}: "___" draws nothing`);
    }
    await page.close();
  });

  test('inserts and deletes rows and columns from the menu', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'structure'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'top'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    const menu = async (label) => {
      await page.click('#structure-menu summary');
      await page.click(`#structure-menu button:has-text("${label}")`);
    };
    await page.click('.grid-cell[data-ref="A1"]');
    await menu('Insert row above');
    await waitUntil('A1 moved to A2', async () => (await cellValue(server, sheet, 'A2')) === 'top');
    await waitForCellText(page, 'A2', 'top');
    await menu('Insert column left');
    await waitUntil('A2 moved to B2', async () => (await cellValue(server, sheet, 'B2')) === 'top');
    await page.click('.grid-cell[data-ref="B2"]');
    await menu('Delete row');
    await waitUntil('row 2 deleted', async () => (await cellValue(server, sheet, 'B2')) === null);
    const types = (await api(server, 'GET', `/v1/sheets/${sheet}/entries?from=2`)).body.entries
      .map((e) => e.type).filter((t) => t !== 'Snapshot');
    assert.deepEqual(types, ['InsertRows', 'InsertColumns', 'DeleteRows']);
    await page.close();
  });

  test('the grid keeps leading spaces, freezes row 1, fetches ahead, and takes a snapshot now',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'grid details', snapshot_every: 0});
    const rows = [['Item', 'Amount'], ...Array.from({length: 299}, (_, i) => [`  item ${i + 2}`, i])];
    await append(server, sheet, 'SetCells', {at: 'A1', rows});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'A2', '  item 2');  // two spaces kept
    assert.equal(await page.$eval('.grid-cell[data-ref="A2"]', (c) => getComputedStyle(c).whiteSpace), 'pre');
    // Fetch ahead: once the visible tiles are in, the rows below the view are loaded too,
    // so the frame after a one-screen scroll has no cell without data.
    await page.waitForFunction(() => document.querySelectorAll('.grid-body .grid-loading').length === 0);
    await page.waitForFunction(() => performance.getEntriesByType('resource')
      .some((r) => /range=A65%3AP128/.test(r.name)));
    const blanks = await page.evaluate(async () => {
      const scroller = document.querySelector('.grid-scroller');
      scroller.scrollTop = 24 * 60;  // rows 61.. : into the second tile (rows 65-128)
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return document.querySelectorAll('.grid-body .grid-loading').length;
    });
    assert.equal(blanks, 0);
    // Freeze row 1: the header row stays in view however far the grid scrolls.
    await page.click('#freeze-row');
    assert.equal(await page.getAttribute('#freeze-row', 'aria-pressed'), 'true');
    await page.evaluate(() => { document.querySelector('.grid-scroller').scrollTop = 24 * 150; });
    await page.waitForFunction(() => {
      const frozen = document.querySelector('.grid-frozen .grid-cell[data-frozen-ref="A1"]');
      return frozen && frozen.textContent === 'Item' && frozen.getBoundingClientRect().height > 0;
    });
    const headerBox = await page.locator('.grid-header-row').boundingBox();
    const frozenBox = await page.locator('.grid-frozen .grid-cell[data-frozen-ref="A1"]').boundingBox();
    assert.ok(Math.abs(frozenBox.y - (headerBox.y + headerBox.height)) <= 1, 'right under the headers');
    // "Snapshot now" appends a Snapshot entry, which the pipeline builds.
    const head = await nextSeq(server, sheet);
    await page.click('#snapshot-now');
    await page.waitForSelector(`.toast:has-text("Snapshot entry appended at seq ${head}")`);
    const entry = (await api(server, 'GET', `/v1/sheets/${sheet}/entries/${head}`)).body;
    assert.equal(entry.type, 'Snapshot');
    // The choice to freeze is kept for the sheet.
    await page.reload();
    await page.waitForSelector('#freeze-row[aria-pressed="true"]');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  // A sheet `name` where A1 went from "old" to "new", opened in a page and taken back
  // (the Seq box, Enter) to the seq that wrote "old".
  async function openTheOldA1(server, name) {
    const sheet = await createSheet(server, {name});
    const old = await append(server, sheet, 'SetCell', {ref: 'A1', value: 'old'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 'new'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'A1', 'new');
    await page.getByLabel('Seq', {exact: true}).fill(String(old.seq));
    await page.getByLabel('Seq', {exact: true}).press('Enter');
    await waitForCellText(page, 'A1', 'old');
    return {sheet, old, page};
  }

  test('time travel shows the old value, read-only, with the entry that changed it',
       TEST_OPTIONS, async () => {
    const {sheet, old, page} = await openTheOldA1(server, 'history');
    await page.waitForSelector('#history-banner:has-text("SetCell A1 = old")');
    assert.match(await page.textContent('#history-banner'), /Read-only/);
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-readonly'), 'true');
    assert.match(page.url(), new RegExp(`\\?at=${old.seq}$`));
    assert.equal(await page.locator('button:has-text("Back to live"):visible').count(), 1);
    // Typing does not edit.
    await page.click('.grid-cell[data-ref="B1"]');
    await page.keyboard.type('x');
    assert.equal(await page.locator('.grid-input.grid-editing').count(), 0);
    // The log's "View as of" opens the same view.
    await page.click('a.tab:has-text("Log")');
    await page.click(`tr[data-seq="${old.seq}"] a:has-text("View as of")`);
    await waitForCellText(page, 'A1', 'old');
    await page.click('#back-to-live');
    await waitForCellText(page, 'A1', 'new');
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-readonly'), 'false');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('"Fork at this seq" in history mode makes a sheet of the past and opens it',
       TEST_OPTIONS, async () => {
    const {sheet, old, page} = await openTheOldA1(server, 'fork source');
    await page.click('#fork-here');
    await page.waitForSelector('dialog.modal #fork-name');
    assert.equal(await page.inputValue('#fork-name'), `fork source at ${old.seq}`);
    await page.fill('#fork-name', 'what if');
    await page.keyboard.press('Enter');
    // The fork's own page, live and writable, with the cells as of the seq forked at.
    await page.waitForURL((url) => !url.pathname.endsWith(`/sheets/${sheet}`) &&
                          /\/console\/sheets\/[^/]+$/.test(url.pathname));
    const forkId = page.url().split('/').pop();
    await waitForCellText(page, 'A1', 'old');
    assert.equal(await page.getAttribute('[role="grid"]', 'aria-readonly'), 'false');
    const fork = (await api(server, 'GET', `/v1/sheets/${forkId}`)).body;
    assert.equal(fork.name, 'what if');
    assert.equal(fork.fork_of, sheet);
    assert.equal(fork.next_seq, old.seq + 1);
    // The source is as it was.
    const source = (await api(server, 'GET', `/v1/sheets/${sheet}`)).body;
    assert.equal(source.next_seq, old.seq + 2);
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
    await page.getByLabel('Go to seq').fill('30');
    await page.click('button:has-text("Go")');
    await page.waitForSelector('#log-table tr[data-seq="30"]');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('imports a CSV (merging by default), asks before Replace, and shows a refusal as one',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'import'});
    await append(server, sheet, 'SetCell', {ref: 'D1', value: 'kept by a merge'});
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/files`);
    await page.getByLabel('File (CSV or XLSX)').setInputFiles({
      name: 'fruit.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('name,qty,price\r\napple,3,1.25\r\npear,10,0.5\r\n'),
    });
    assert.equal(await page.getByLabel('Mode').inputValue(), 'merge');
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('.import-result:has-text("Imported as entry seq")');
    const progress = await page.$eval('progress[aria-label="Upload progress"]', (p) => [p.value, p.max]);
    assert.equal(progress[0], progress[1]);
    assert.equal(await cellValue(server, sheet, 'B2'), 3);
    assert.equal(await cellValue(server, sheet, 'D1'), 'kept by a merge');
    await page.click('.import-result a:has-text("Open the grid")');
    await waitForCellText(page, 'A3', 'pear');
    await waitForCellText(page, 'C2', '1.25');

    // Replace asks first; Cancel writes nothing.
    await page.click('a.tab:has-text("Import / export")');
    const next = await nextSeq(server, sheet);
    await page.getByLabel('File (CSV or XLSX)').setInputFiles({
      name: 'other.csv', mimeType: 'text/csv', buffer: Buffer.from('x\r\n'),
    });
    await page.getByLabel('Mode').selectOption('replace');
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('dialog.modal[open]:has-text("Replace the whole sheet?")');
    await page.click('dialog.modal button:has-text("Cancel")');
    assert.equal(await nextSeq(server, sheet), next);
    // A file that is neither CSV nor XLSX is refused before anything is sent.
    await page.getByLabel('Mode').selectOption('merge');
    await page.getByLabel('File (CSV or XLSX)').setInputFiles({
      name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello'),
    });
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('.progress-failed');
    await page.waitForSelector('.import-result:has-text("is not a .csv or .xlsx file")');
    // Said once: not again in the progress line or a toast.
    const times = (text) => page.evaluate((t) => document.body.innerText.split(t).length - 1, text);
    assert.equal(await times('is not a .csv or .xlsx file'), 1);
    // A file that does not parse is refused with nothing written, and the progress line
    // says so (it stayed at "checking and appending…").
    await page.getByLabel('File (CSV or XLSX)').setInputFiles({
      name: 'broken.csv', mimeType: 'text/csv', buffer: Buffer.from('a,"b\r\n'),
    });
    await page.click('button:has-text("Upload and import")');
    await page.waitForSelector('.progress-failed');
    await page.waitForSelector('.import-result:has-text("CSV line")');
    assert.doesNotMatch(await page.textContent('.progress-row'), /checking and appending/);
    assert.match(await page.textContent('.import-result'), /broken.csv was refused; nothing was written/);
    // The server's message is shown once (not in the progress line, the notice and a toast).
    assert.equal(await times('CSV line'), 1);
    assert.equal(await nextSeq(server, sheet), next);
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

  test('blobs: browse by prefix, upload, preview, edit tags, delete; server areas are read-only',
       TEST_OPTIONS, async () => {
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
    // Preview.
    await page.click('button[aria-label="Preview reports/2026/q1.txt"]');
    await page.waitForSelector('#blob-preview-text:has-text("hello blob")');
    await page.click('dialog.modal button:has-text("Close")');
    // Upload under the prefix.
    await page.getByLabel('File', {exact: true}).setInputFiles({
      name: 'q2.csv', mimeType: 'text/csv', buffer: Buffer.from('a,b\r\n1,2\r\n'),
    });
    await page.click('#blob-upload button:has-text("Upload")');
    await page.waitForSelector('#blobs-table tr:has-text("q2.csv")');
    assert.equal(await (await fetch(`${server.url}/v1/blobs/reports/2026/q2.csv`)).text(), 'a,b\r\n1,2\r\n');
    // Tags.
    await page.click('button[aria-label="Edit the tags of reports/2026/q2.csv"]');
    await page.fill('#tag-editor', 'team=ops\nstage=draft');
    await page.click('dialog.modal button:has-text("Save tags")');
    await page.waitForSelector('#blobs-table tr:has-text("q2.csv"):has-text("stage=draft")');
    const tags = await (await fetch(`${server.url}/v1/blobs/reports/2026/q2.csv?tagging`)).json();
    assert.deepEqual(tags.tags, {team: 'ops', stage: 'draft'});
    // Delete, after a confirmation.
    await page.click('button[aria-label="Delete reports/2026/q2.csv"]');
    await page.click('dialog.modal button.btn-danger');
    await page.waitForSelector('#blobs-table tr:has-text("q2.csv")', {state: 'detached'});
    assert.equal((await fetch(`${server.url}/v1/blobs/reports/2026/q2.csv`)).status, 404);
    // The server's own objects: read, never changed from here.
    const sheet = await createSheet(server, {name: 'blob areas'});
    await waitUntil('entry 0 built', async () => (await api(server, 'GET', `/v1/sheets/${sheet}`)).body.last_snapshot);
    await page.goto(`${server.url}/console/blobs?prefix=snapshots/${sheet}/`);
    await page.waitForSelector('.notice:has-text("the server’s own area")');
    await page.waitForSelector('#blobs-table tbody tr');
    assert.equal(await page.locator('#blobs-table button:has-text("Delete")').count(), 0);
    assert.equal(await page.locator('#blob-upload').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('shows the cost of a sheet in plain dollars', TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'cost'});
    await append(server, sheet, 'SetCell', {ref: 'A1', value: 1});
    const page = await browser.page();
    await page.goto(`${server.url}/console/sheets/${sheet}/cost`);
    await page.waitForSelector('#cost-requests');
    assert.match(await page.textContent('.cost'), /Write units/);
    assert.match(await page.textContent('#cost-requests'), /^\$0\.0+[1-9]\d*$/);
    assert.doesNotMatch(await page.textContent('.cost'), /\$[\d.]+e-/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('tables: browse the Entry table by key with a filter, see an item, edit its metadata',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'tables', snapshot_every: 0});
    for (let i = 1; i <= 5; i++) await append(server, sheet, i === 3 ? 'Note' : 'SetCell', {ref: `A${i}`, value: i});
    const page = await browser.page();
    await page.goto(`${server.url}/console/tables`);
    await page.click('#table-list a:has-text("entry")');
    await page.getByLabel('sheet_id').fill(sheet);
    await page.getByLabel('segment').fill('0');
    await page.getByLabel('num from').fill('2');
    await page.click('button:has-text("Run")');
    await page.waitForSelector('#items-table');
    assert.equal(await page.locator('#items-table tbody tr').count(), 4);  // num 2..5
    // Times read as local date and time, next to the raw value.
    const created = (await api(server, 'GET', `/v1/sheets/${sheet}/entries/2`)).body.created;
    const column = await page.$$eval('#items-table th', (hs) => hs.map((h) => h.textContent).indexOf('created'));
    const shown = await page.$eval(`#items-table tbody tr:first-child td:nth-child(${column + 1})`, (td) => td.textContent);
    const local = await page.evaluate((s) => {
      const d = new Date(s * 1000);
      const p = (n) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }, created);
    assert.ok(shown.includes(local), `'${shown}' shows ${local}`);
    assert.ok(shown.includes(String(created)), `'${shown}' shows ${created}`);
    await page.getByLabel('Attribute').selectOption('type');
    await page.getByLabel('Value').fill('Note');
    await page.click('button:has-text("Run")');
    await page.waitForFunction(() => document.querySelectorAll('#items-table tbody tr').length === 1);
    assert.match(await page.textContent('.table-browser'), /1 item \(4 read\)/);
    await page.click('#items-table button:has-text("JSON")');
    await page.waitForSelector('#item-json');
    assert.match(await page.textContent('#item-json'), /"type": "Note"/);
    await page.getByLabel('pending (empty clears)').fill('snapshot');
    await page.click('dialog.modal button:has-text("Save metadata")');
    await page.waitForSelector('.toast:has-text("Saved the metadata of seq 3")');
    assert.equal((await api(server, 'GET', `/v1/sheets/${sheet}/entries/3`)).body.pending, 'snapshot');
    // A scan of the segment table pages through every sheet's segments.
    await page.click('#table-list a:has-text("segment")');
    await page.getByLabel('Items per page').fill('1');
    await page.click('button:has-text("Run")');
    await page.waitForSelector('#items-table');
    await page.click('button:has-text("Next page")');
    await page.waitForSelector('button:has-text("Previous page")');
    // Microseconds (the execution history's created_at) likewise.
    await page.click('#table-list a:has-text("execution_history")');
    await page.click('button:has-text("Run")');
    await page.waitForSelector('#items-table tbody tr');
    const micros = await page.$$eval('#items-table th', (hs) => hs.map((h) => h.textContent).indexOf('created_at'));
    const cell = await page.$eval(`#items-table tbody tr:first-child td:nth-child(${micros + 1})`, (td) => td.textContent);
    assert.match(cell, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\s*\d{16}$/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('functions: the invocation log lists each worker run with outcome and duration',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'functions'});
    await waitUntil('entry 0 built', async () => (await api(server, 'GET', `/v1/sheets/${sheet}`)).body.last_snapshot);
    const page = await browser.page();
    await page.goto(`${server.url}/console/functions`);
    // The change feed's handler requested the snapshot; the snapshot worker built it (and
    // disposed of its message itself: the history says "deferred", "handled by the
    // handler").
    const ours = `#invocations-table tr[data-source="entry-effects"]:has-text("${sheet}")`;
    await page.waitForSelector(ours);
    await page.waitForSelector('#invocations-table tr[data-source="snapshot-worker"]');
    const row = await page.textContent(ours);
    assert.match(row, /succeeded/);
    assert.match(row, /\d+(\.\d+)? (µs|ms|s)/);
    await page.getByLabel('Outcome').selectOption('failed');
    await page.waitForFunction(() => [...document.querySelectorAll('#invocations-table tbody tr[data-status]')]
      .every((r) => r.dataset.status === 'failed'));
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('controls: the clock moves and fault points arm and disarm from the page', TEST_OPTIONS, async () => {
    const page = await browser.page();
    await page.goto(`${server.url}/console/controls`);
    await page.waitForSelector('#clock-card .badge:has-text("manual")');
    const before = (await api(server, 'GET', '/v1/admin/clock')).body.now;
    await page.getByLabel('Seconds').fill('5');
    await page.click('#clock-card button:has-text("Advance")');
    await waitUntil('the clock moved', async () => (await api(server, 'GET', '/v1/admin/clock')).body.now === before + 5);
    // The points to choose from are the server's (it names them when refusing an unknown one).
    const refusal = (await api(server, 'DELETE', '/v1/admin/faults?point=no.such.point')).body.error.message;
    const known = /known points: ([^)]*)\)/.exec(refusal)[1].split(', ');
    assert.ok(known.includes('log.truncate.before_drop'));
    await page.waitForSelector('#fault-point option[value="log.truncate.before_drop"]', {state: 'attached'});
    assert.equal(await page.$eval('#fault-point', (e) => e.tagName), 'SELECT');
    assert.deepEqual(await page.$$eval('#fault-point option', (os) => os.map((o) => o.value).filter(Boolean)),
                     known);
    await page.getByLabel('Point').selectOption('log.truncate.before_drop');
    await page.click('#arm-fault button:has-text("Arm")');
    await page.waitForSelector('#faults-table tr[data-point="log.truncate.before_drop"]');
    assert.equal((await api(server, 'GET', '/v1/admin/faults')).body.armed[0].point, 'log.truncate.before_drop');
    await page.click('button[aria-label="Disarm log.truncate.before_drop"]');
    await page.waitForSelector('#faults-table', {state: 'detached'});
    assert.deepEqual((await api(server, 'GET', '/v1/admin/faults')).body.armed, []);
    await page.waitForSelector('#reset-button');  // --allow-reset: shown (not pressed here)
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('pipeline: a queue is peeked without receiving, sent to and purged', TEST_OPTIONS, async () => {
    const page = await browser.page();
    await page.goto(`${server.url}/console/pipeline`);
    await page.click('button[aria-label="Show messages of snapshots-dlq"]');
    await page.waitForSelector('#queue-messages:has-text("The queue is empty")');
    await page.getByLabel('Send a message to snapshots-dlq (test control)').fill('{"not": "a job"}');
    await page.click('#queue-messages button:has-text("Send")');
    await page.waitForSelector('#messages-table');
    assert.match(await page.textContent('#messages-table'), /not/);
    const peeked = (await api(server, 'GET', '/v1/admin/queues/snapshots-dlq/messages')).body.messages;
    assert.equal(peeked.length, 1);
    assert.equal(peeked[0].receive_count, 0, 'peeking receives nothing');
    await page.click('button[aria-label="Purge snapshots-dlq"]');
    await page.click('dialog.modal button:has-text("Purge")');
    await page.waitForSelector('#queue-messages:has-text("The queue is empty")');
    assert.equal((await api(server, 'GET', '/v1/admin/queues/snapshots-dlq/messages')).body.messages.length, 0);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('pipeline: redriving one dead letter asks first, as "Redrive all" does', TEST_OPTIONS, async () => {
    const sent = await api(server, 'POST', '/v1/admin/queues/snapshots-dlq/messages', {body: '{"poison": 1}'});
    assert.ok(sent.status < 300, JSON.stringify(sent.body));
    const deadLetters = async () => (await api(server, 'GET', '/v1/admin/queues/snapshots/dead-letters')).body.messages;
    assert.equal((await deadLetters()).length, 1);
    const page = await browser.page();
    await page.goto(`${server.url}/console/pipeline`);
    await page.click('button[aria-label="Show dead letters of snapshots"]');
    await page.waitForSelector(`#dead-letter-table tr[data-message="${sent.body.id}"]`);
    await page.click(`#dead-letter-table tr[data-message="${sent.body.id}"] button:has-text("Redrive")`);
    await page.waitForSelector('dialog.modal[open]:has-text("Redrive")');
    assert.match(await page.textContent('dialog.modal[open]'), new RegExp(sent.body.id));
    await page.click('dialog.modal button:has-text("Cancel")');
    assert.equal((await deadLetters()).length, 1, 'Cancel redrives nothing');
    await page.click(`#dead-letter-table tr[data-message="${sent.body.id}"] button:has-text("Redrive")`);
    // Confirmed, the redrive is asked of the server (which cannot return a message put
    // in the dead-letter queue by hand: it has no source queue, and the page says so).
    await page.click('dialog.modal[open] button.btn-primary');
    await page.waitForSelector('.toast:has-text("has no source queue")');
    await api(server, 'POST', '/v1/admin/queues/snapshots-dlq/purge', {});
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('screenshots of the grid, the pipeline and the new screens', TEST_OPTIONS, async () => {
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
    await page.click('.grid-cell[data-ref="C4"]', {modifiers: ['Shift']});
    await waitForCellText(page, 'A10', 'Owner');
    await page.screenshot({path: path.join(screenshotDir, 'console-grid.png')});

    await page.goto(`${server.url}/console/pipeline`);
    await page.waitForSelector('#queues-table');
    await page.waitForSelector('#feed-table');
    await page.waitForFunction(() => document.querySelectorAll('.chart-value')[1].textContent !== '—');
    await page.screenshot({path: path.join(screenshotDir, 'console-pipeline.png')});

    await page.goto(`${server.url}/console/tables/entry?sheet_id=${sheet}&segment=0`);
    await page.waitForSelector('#items-table');
    await page.screenshot({path: path.join(screenshotDir, 'console-tables.png'), fullPage: true});

    await page.goto(`${server.url}/console/functions`);
    await page.waitForSelector('#invocations-table');
    await page.screenshot({path: path.join(screenshotDir, 'console-functions.png')});
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('formulas show their values, recomputed as cells change here and elsewhere; errors as spreadsheets show them',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'formulas'});
    await append(server, sheet, 'SetCells', {at: 'A1', rows: [
      ['Item', 'Amount', 'Errors'],
      ['Rent', 420.5, '=B2/0'],
      ['Food', 380.09, '=NOSUCHFUNCTION(1)'],
      ['Fuel', 500, '=C5'],
      ['Misc', 380, '=C4'],
      ['Total', '=SUM(B2:B5)', '="a"+1'],
      ['Twice', '=B6*2', '=#REF!+1'],
      ['Far', '=Z500+MAX(B2:B5)', '=UPPER(A2)'],
    ]});
    // Z500: outside the tiles the view loads; a formula still sees it.
    await append(server, sheet, 'SetCell', {ref: 'Z500', value: 7});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'B6', '1680.59');
    await waitForCellText(page, 'B7', '3361.18');
    await waitForCellText(page, 'B8', '507');
    await waitForCellText(page, 'C2', '#DIV/0!');
    await waitForCellText(page, 'C3', '#NAME?');
    await waitForCellText(page, 'C4', '#CYCLE!');
    await waitForCellText(page, 'C5', '#CYCLE!');
    await waitForCellText(page, 'C6', '#VALUE!');
    await waitForCellText(page, 'C7', '#REF!');
    await waitForCellText(page, 'C8', 'RENT');
    // The formula bar shows the formula, the cell its value.
    await page.click('.grid-cell[data-ref="B6"]');
    assert.equal(await page.inputValue('#formula-input'), '=SUM(B2:B5)');
    await page.waitForSelector('.cell-info :text("= 1680.59")');
    // Typed here: the total follows at once (the value on its way counts), and stays.
    await page.click('.grid-cell[data-ref="B2"]');
    await page.keyboard.type('500');
    await page.keyboard.press('Enter');
    await waitForCellText(page, 'B6', '1760.09');
    await waitForCellText(page, 'B7', '3520.18');
    await waitUntil('B2 saved', async () => (await cellValue(server, sheet, 'B2')) === 500);
    // Another client's change: the page hears of it and recomputes.
    await append(server, sheet, 'SetCell', {ref: 'B3', value: 400});
    await waitForCellText(page, 'B6', '1780');
    await append(server, sheet, 'SetCell', {ref: 'Z500', value: 1000});
    await waitForCellText(page, 'B8', '1500');
    // Breaking the cycle mends both cells.
    await append(server, sheet, 'SetCell', {ref: 'C5', value: 5});
    await waitForCellText(page, 'C4', '5');
    // A few thousand formulas: the page shows their total, and follows a change.
    const rows = [];
    for (let r = 1; r <= 3000; r++) rows.push([r, `=A${r}*2`]);
    const big = await createSheet(server, {name: 'many formulas'});
    await append(server, big, 'SetCells', {at: 'A1', rows});
    await append(server, big, 'SetCell', {ref: 'C1', value: '=SUM(B1:B3000)'});
    await openSheet(page, server, big);
    await waitForCellText(page, 'C1', String(3000 * 3001));
    await append(server, big, 'SetCell', {ref: 'A3000', value: 0});
    await waitForCellText(page, 'C1', String(3000 * 3001 - 6000));
    await page.screenshot({path: path.join(screenshotDir, 'console-formulas.png')});
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('entry as in a spreadsheet: Tab…Enter, numbers typed in display forms, pasted formulas move',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'entry'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    // Tab, Tab, Enter: the next row, in the column the run started in.
    await page.click('.grid-cell[data-ref="B1"]');
    for (const text of ['x', 'y']) {
      await page.keyboard.type(text);
      await page.keyboard.press('Tab');
    }
    await page.keyboard.type('z');
    await page.keyboard.press('Enter');
    assert.equal(await activeRef(page), 'B2');
    await waitUntil('D1 = z', async () => (await cellValue(server, sheet, 'D1')) === 'z');
    // Numbers in display forms: numbers on the server, with the format that shows them so.
    const typed = [['A3', '1,234.50', 1234.5, '#,##0.00'], ['A4', '5%', 0.05, '0%'],
                   ['A5', '$12', 12, '$#,##0'], ['A6', '2026-12-07', 46363, 'yyyy-mm-dd'],
                   ['A7', '12/7/2026', 46363, 'm/d/yyyy']];
    await page.click('.grid-cell[data-ref="A3"]');
    for (const [, text] of typed) {
      await page.keyboard.type(text);
      await page.keyboard.press('Enter');
    }
    await waitUntil('A7 saved', async () => (await cellValue(server, sheet, 'A7')) === 46363);
    const read = (await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=A3:A7`)).body;
    assert.deepEqual(read.rows.map((r) => r[0]), typed.map((t) => t[2]));
    assert.deepEqual(read.formats.map((r) => r[0]), typed.map((t) => t[3]));
    await page.reload();
    await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-loading)');
    for (const [ref, text] of typed) await waitForCellText(page, ref, text);
    // A formula copied here and pasted one row down and one column right: its relative
    // references move, $-anchored ones stay (the server's rule for imports).
    await append(server, sheet, 'SetCells', {at: 'A10', rows: [[1, '=A10*2', '=$A$10+A10']]});
    await waitForCellText(page, 'B10', '2');
    await page.click('.grid-cell[data-ref="B10"]');
    await page.click('.grid-cell[data-ref="C10"]', {modifiers: ['Shift']});
    await page.keyboard.press('Control+C');
    await page.click('.grid-cell[data-ref="C11"]');
    await page.keyboard.press('Control+V');
    await waitUntil('pasted', async () => (await cellValue(server, sheet, 'D11')) === '=$A$10+B11');
    assert.equal(await cellValue(server, sheet, 'C11'), '=B11*2');
    // Text from elsewhere pastes as it is, numbers in display forms with their formats.
    await page.evaluate(() => navigator.clipboard.writeText('=A1\t5%\t$3\r\n'));
    await page.click('.grid-cell[data-ref="E1"]');
    await page.keyboard.press('Control+V');
    await waitUntil('G1 = 3', async () => (await cellValue(server, sheet, 'G1')) === 3);
    const pasted = (await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=E1:G1`)).body;
    assert.deepEqual(pasted.rows, [['=A1', 0.05, 3]]);
    assert.deepEqual(pasted.formats, [['', '0%', '$#,##0']]);
    await waitForCellText(page, 'F1', '5%');
    // Copied, a percentage is "5%" (as shown and as typed), and pasted it stays one.
    await page.keyboard.press('ArrowRight');
    assert.equal(await activeRef(page), 'F1');
    await page.keyboard.press('Control+C');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), '5%');
    await page.click('.grid-cell[data-ref="F2"]');
    await page.keyboard.press('Control+V');
    await waitForCellText(page, 'F2', '5%');
    // The page shows the paste before the server has stored it: wait for the server.
    await waitUntil('F2 stored as 5%', async () => (await cellValue(server, sheet, 'F2')) === 0.05);
    assert.deepEqual((await api(server, 'GET', `/v1/sheets/${sheet}/cells?range=F2:F2`)).body.formats, [['0%']]);
    // F2 on a percentage edits "5%"; Enter changes nothing.
    const quiet = await nextSeq(server, sheet);
    await page.keyboard.press('F2');
    assert.equal(await page.inputValue('.grid-input'), '5%');
    await page.keyboard.press('Enter');
    // Then a real edit: it is the only entry appended.
    await page.keyboard.type('x');
    await page.keyboard.press('Enter');
    await waitUntil('F3 = x', async () => (await cellValue(server, sheet, 'F3')) === 'x');
    assert.equal(await nextSeq(server, sheet), quiet + 1);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  test('columns resize by dragging the header edge (kept for the sheet); Ctrl+F finds values and formulas',
       TEST_OPTIONS, async () => {
    const sheet = await createSheet(server, {name: 'widths and find'});
    await append(server, sheet, 'SetCells', {at: 'A1', rows: [['apples', 3], ['pears', '=B1*2'],
                                                              ['total', '=SUM(B1:B2)']]});
    await append(server, sheet, 'SetCell', {ref: 'C300', value: 'Pear tree'});
    const page = await browser.page();
    await openSheet(page, server, sheet);
    await waitForCellText(page, 'B3', '9');
    const head = page.locator('.grid-column-head[data-column="2"]');
    const box = await head.boundingBox();
    const cellBefore = await page.locator('.grid-cell[data-ref="C1"]').boundingBox();
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width + 40, box.y + box.height / 2);
    await page.mouse.move(box.x + box.width + 78, box.y + box.height / 2);
    await page.mouse.up();
    const widened = await head.boundingBox();
    assert.ok(Math.abs(widened.width - (box.width + 80)) <= 2, `B is ${widened.width} px wide`);
    const cellAfter = await page.locator('.grid-cell[data-ref="C1"]').boundingBox();
    assert.ok(Math.abs(cellAfter.x - (cellBefore.x + 80)) <= 2, 'C moved right by what B grew');
    // Clicking a cell still selects the cell under the pointer.
    await page.click('.grid-cell[data-ref="C2"]');
    assert.equal(await activeRef(page), 'C2');
    await page.reload();
    await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-loading)');
    const kept = await page.locator('.grid-column-head[data-column="2"]').boundingBox();
    assert.ok(Math.abs(kept.width - widened.width) <= 1, 'the width is kept for the sheet');

    // Find: Ctrl+F, matches in reading order (values shown, formulas' text), Enter and
    // Shift+Enter go on and back, the match is highlighted and scrolled to.
    await waitForCellText(page, 'B3', '9');
    await page.click('.grid-cell[data-ref="A1"]');
    await page.keyboard.press('Control+F');
    assert.equal(await focused(page), 'find-input');
    await page.keyboard.type('pear');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === '1 of 2');
    assert.equal(await activeRef(page), 'A2');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === '2 of 2');
    // C300 is far below: the grid renders it once it has scrolled there, and only a
    // rendered cell can be the grid's aria-activedescendant.
    await page.waitForSelector('.grid-cell.grid-found[data-ref="C300"]');
    await page.waitForFunction(() => {
      const id = document.querySelector('[role="grid"]').getAttribute('aria-activedescendant');
      return id !== null && document.getElementById(id)?.dataset.ref === 'C300';
    });
    assert.equal(await activeRef(page), 'C300');
    await page.keyboard.press('Shift+Enter');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === '1 of 2');
    assert.equal(await activeRef(page), 'A2');
    // A formula's text ("SUM") and its value ("9") are both found.
    await page.fill('#find-input', 'sum(');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === '1 of 1');
    assert.equal(await activeRef(page), 'B3');
    await page.fill('#find-input', '9');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === '1 of 1');
    await page.fill('#find-input', 'nothing like it');
    await page.waitForFunction(() => document.querySelector('#find-status').textContent === 'No match');
    await page.keyboard.press('Escape');
    assert.equal(await page.isHidden('#find-bar'), true);
    assert.equal(await page.locator('.grid-found').count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement.classList.contains('grid-input')), true);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  describe('on a phone (390x844)', () => {
    let phone;

    before(async () => {
      phone = await launchBrowser({viewport: {width: 390, height: 844}, deviceScaleFactor: 2});
    });

    after(async () => {
      if (phone) await phone.close();
    });

    // Nothing is wider than the screen: the document does not scroll sideways.
    async function assertNoOverflow(page, what) {
      const widths = await page.evaluate(() => ({
        document: document.documentElement.scrollWidth, viewport: window.innerWidth,
        wide: [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 &&
                         !e.closest('.table-wrap, .grid, .nav, .tabs, .card'))
          .slice(0, 5).map((e) => `${e.tagName}.${e.className}`),
      }));
      assert.ok(widths.document <= widths.viewport,
                `${what}: the page is ${widths.document} px wide in a ${widths.viewport} px viewport ` +
                `(${widths.wide.join(', ')})`);
    }

    // Every control a finger taps is at least 24x24 CSS px (WCAG 2.5.8), links inside a
    // sentence aside.
    async function assertTapTargets(page, what) {
      const small = await page.evaluate(() => [...document.querySelectorAll(
        'a[href], button, input:not([type="hidden"]), select, textarea, summary, [role="button"]')]
        .filter((e) => {
          const r = e.getBoundingClientRect();
          if (r.width === 0 || r.height === 0 || getComputedStyle(e).visibility === 'hidden') return false;
          if (e.closest('.sr-only, .grid-input')) return false;
          if (e.tagName === 'A' && e.closest('p, li.inline, .notice') && getComputedStyle(e).display === 'inline') return false;
          return r.width < 24 || r.height < 24;
        })
        .map((e) => {
          const r = e.getBoundingClientRect();
          return `${e.tagName}.${e.className} "${(e.textContent || e.getAttribute('aria-label') || '').trim().slice(0, 20)}" ${Math.round(r.width)}x${Math.round(r.height)}`;
        }));
      assert.deepEqual(small, [], `${what}: tap targets under 24 px`);
    }

    test('every page fits the screen; the grid edits from the formula bar', TEST_OPTIONS, async () => {
      const sheet = await createSheet(server, {name: 'phone sheet with a rather long name'});
      await append(server, sheet, 'SetCells', {at: 'A1', rows: [['Item', 'Amount'], ['Rent', 3600]]});
      await append(server, sheet, 'SetCell', {ref: 'C1', value: 'Note'});  // seq 1 is the past
      const page = await phone.page();
      for (const route of ['/console/', `/console/sheets/${sheet}/files`, `/console/sheets/${sheet}/log`,
                           `/console/sheets/${sheet}/cost`, '/console/pipeline', '/console/tables/entry',
                           '/console/functions', '/console/blobs', '/console/controls']) {
        await page.goto(server.url + route);
        await page.waitForSelector('.page');
        await page.waitForFunction(() => !document.querySelector('.page p.muted')?.textContent.startsWith('Loading'));
        await assertNoOverflow(page, route);
        await assertTapTargets(page, route);
      }
      // The top navigation scrolls sideways on a phone, and says so.
      await page.goto(`${server.url}/console/`);
      await page.waitForSelector('.page');
      const nav = await page.$eval('.nav', (n) => ({scroll: n.scrollWidth, client: n.clientWidth}));
      assert.ok(nav.scroll > nav.client, 'the navigation is wider than the screen here');
      await page.waitForSelector('.nav-more-right', {state: 'visible'});
      await page.$eval('.nav', (n) => { n.scrollLeft = n.scrollWidth; });
      await page.waitForSelector('.nav-more-right', {state: 'hidden'});
      await page.waitForSelector('.nav-more-left', {state: 'visible'});
      await page.goto(`${server.url}/console/sheets/${sheet}/files`);
      await page.waitForSelector('#import-worksheet');
      for (const field of ['#import-file', '#import-mode', '#import-at', '#import-worksheet']) {
        const box = await page.locator(field).boundingBox();
        assert.ok(box.x >= 0 && box.x + box.width <= 390, `${field} is clipped`);
      }
      await openSheet(page, server, sheet, '?at=1');
      await assertNoOverflow(page, 'the grid as of seq 1');
      const seqBox = await page.locator('#history-seq').boundingBox();
      assert.ok(seqBox.width >= 80, `the seq box is ${seqBox.width} px wide`);
      const live = await page.locator('#back-to-live').boundingBox();
      assert.ok(live.x + live.width <= 390, '"Back to live" is cut off');
      await page.screenshot({path: path.join(screenshotDir, 'console-phone-history.png')});
      await page.click('#back-to-live');
      await waitForCellText(page, 'B2', '3600');
      // The toolbar leaves most of the screen to the grid.
      const grid = await page.locator('.grid').boundingBox();
      assert.ok(grid.height >= 844 / 2, `the grid is ${grid.height} px tall`);
      // On a phone, the formula bar edits (a tap selects the cell).
      await page.click('.grid-cell[data-ref="B2"]');
      await page.fill('#formula-input', '3700');
      await page.press('#formula-input', 'Enter');
      await waitUntil('B2 = 3700', async () => (await cellValue(server, sheet, 'B2')) === 3700);
      await page.screenshot({path: path.join(screenshotDir, 'console-phone-grid.png')});
      assert.deepEqual(page.errors, []);
      await page.close();
    });
  });
});

// Seed 000's failure path end to end: every build of one snapshot fails until its
// message is dead-lettered, and the pipeline page shows it as dead-lettered (not
// "building") and redrives it after a confirmation.
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

  test('a dead-lettered snapshot message is shown as such and redriven from the page', TEST_OPTIONS, async () => {
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
    // The pending snapshot is not "building": its job is dead-lettered. Its sheet shows
    // by name, as a link.
    await page.waitForSelector(`#pending-table tr[data-sheet="${sheet}"] .badge:has-text("dead-lettered")`);
    assert.equal(await page.textContent(`#pending-table tr[data-sheet="${sheet}"] a.sheet-link`), 'poison');
    await page.click('button[aria-label="Show dead letters of snapshots"]');
    await page.waitForSelector('#dead-letter-table');
    assert.match(await page.textContent('#dead-letter-table'), new RegExp(sheet));
    // Redriving the one message asks first too.
    await page.click('#dead-letter-table button[aria-label^="Redrive message"]');
    await page.waitForSelector('dialog.modal[open]:has-text("Redrive this message of snapshots?")');
    await page.click('dialog.modal button:has-text("Cancel")');
    assert.equal((await snapshotsQueue()).dead_letter_depth, 1);
    // "Redrive all" asks first.
    await page.click('button[aria-label="Redrive snapshots"]');
    await page.waitForSelector('dialog.modal[open]:has-text("Redrive snapshots?")');
    await page.click('dialog.modal button:has-text("Cancel")');
    assert.equal((await snapshotsQueue()).dead_letter_depth, 1);
    await page.click('button[aria-label="Redrive snapshots"]');
    await page.click('dialog.modal button:has-text("Redrive all")');
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
    assert.equal((await api(server, 'GET', '/v1/admin/tables')).status, 401);

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
