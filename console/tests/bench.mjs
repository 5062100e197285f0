// Measures the console in Debian's chromium against the real binary (not part of the
// test suite): first paint of a sheet page, and scrolling a 10^6-row sheet from top to
// bottom. Usage: node bench.mjs  (SHEETLOG_BINARY picks the binary). Prints JSON.
import {api, createSheet, launchBrowser, startServer, waitUntil} from './harness.mjs';

const ROWS = 1000000;
const SCROLL_STEPS = 300;

const server = await startServer(['--clock', 'manual']);
const browser = await launchBrowser();
try {
  const sheet = await createSheet(server, {name: 'million'});
  const lines = [];
  for (let r = 1; r <= ROWS; r++) lines.push(`row ${r},${r},${r * 0.5}`);
  const csv = Buffer.from(`${lines.join('\r\n')}\r\n`);
  const upload = await api(server, 'POST', `/v1/sheets/${sheet}/uploads`,
                           {type: 'Import', body: {format: 'csv'}, size: csv.length});
  const put = await fetch(upload.body.url, {method: 'PUT', body: csv});
  if (put.status !== 200) throw new Error(`PUT ${put.status}`);
  const done = await api(server, 'POST', `/v1/sheets/${sheet}/uploads/${upload.body.upload_id}/complete`, {});
  if (done.status !== 201) throw new Error(JSON.stringify(done.body));

  // A snapshot after the import, so reads start from it instead of parsing the file.
  await api(server, 'POST', `/v1/sheets/${sheet}/snapshots`, {});
  await waitUntil('the snapshot', async () => (await api(server, 'GET', `/v1/sheets/${sheet}/snapshots`))
      .body.snapshots.every((s) => s.state === 'completed'), 300000);

  const page = await browser.page();
  const started = Date.now();
  await page.goto(`${server.url}/console/sheets/${sheet}`);
  await page.waitForSelector('.grid-cell[data-ref="A1"]:not(.grid-loading)');
  const firstCells = Date.now() - started;
  const paint = await page.evaluate(() => Object.fromEntries(
      performance.getEntriesByType('paint').map((e) => [e.name, Math.round(e.startTime)])));

  // Scroll top to bottom in SCROLL_STEPS jumps, one per frame, recording frame times.
  const scroll = await page.evaluate(async (steps) => {
    const scroller = document.querySelector('.grid-scroller');
    const max = scroller.scrollHeight - scroller.clientHeight;
    const frames = [];
    let last = performance.now();
    const t0 = last;
    for (let i = 1; i <= steps; i++) {
      scroller.scrollTop = Math.round((max * i) / steps);
      await new Promise((resolve) => requestAnimationFrame(resolve));
      const now = performance.now();
      frames.push(now - last);
      last = now;
    }
    frames.sort((a, b) => a - b);
    const pick = (q) => Math.round(frames[Math.floor(q * (frames.length - 1))] * 10) / 10;
    return {steps, total_ms: Math.round(performance.now() - t0), p50_ms: pick(0.5),
            p95_ms: pick(0.95), max_ms: pick(1)};
  }, SCROLL_STEPS);
  // Then jump near the last data row (the grid itself has XLSX's 1,048,576 rows) and
  // wait for its cells.
  const bottomStart = Date.now();
  await page.evaluate((rows) => {
    const scroller = document.querySelector('.grid-scroller');
    const max = scroller.scrollHeight - scroller.clientHeight;
    scroller.scrollTop = Math.round(max * (rows - 10) / (1048576 - 25));
  }, ROWS);
  await waitUntil('the last rows shown', () => page.evaluate(
      () => [...document.querySelectorAll('.grid-cell')].some((c) => /^row 99999\d$/.test(c.textContent))), 60000);
  scroll.last_row_cells_ms = Date.now() - bottomStart;
  console.log(JSON.stringify({rows: ROWS, first_cells_ms: firstCells, paint, scroll}, null, 2));
} finally {
  await browser.close();
  await server.stop();
}
