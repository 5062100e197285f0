// Test harness for the console's browser tests: starts the real sheetlog binary on a free
// loopback port, talks to it over HTTP, and drives Debian's chromium with playwright-core
// (never a browser playwright downloads). Nothing is mocked.
import {spawn} from 'node:child_process';
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import net from 'node:net';
import {tmpdir} from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

import {chromium} from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../..');
export const binary = process.env.SHEETLOG_BINARY || path.join(repoRoot, 'build/asan/sheetlog');
export const chromiumPath = process.env.SHEETLOG_CHROMIUM || '/usr/bin/chromium';
export const screenshotDir =
    process.env.CONSOLE_SCREENSHOTS || path.join(repoRoot, 'build/asan/console-screenshots');

// Real time bounds for waiting on conditions (the server's background work, the page's
// polling). They bound a wait; nothing asserts how long anything took.
const START_TIMEOUT_MS = 60000;
export const WAIT_TIMEOUT_MS = 30000;

// A port no one listens on now (the kernel's pick, released for the server to take).
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const {port} = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

// Starts `sheetlog serve --in-memory` on 127.0.0.1 with a port the kernel picks, and
// resolves once it announced the port (it does that once bound and ready).
export async function startServer(flags = []) {
  const port = await freePort();
  const args = ['serve', '--in-memory', '--listen', `127.0.0.1:${port}`, '--log-level', 'info',
                ...flags];
  const child = spawn(binary, args, {
    stdio: ['ignore', 'pipe', 'pipe'],  // spdlog logs to stdout
    env: {...process.env, ASAN_OPTIONS: process.env.ASAN_OPTIONS || 'detect_leaks=0'},
  });
  let log = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log}`)),
                             START_TIMEOUT_MS);
    const onOutput = (chunk) => {
      log += chunk;
    };
    // Ready once /readyz answers 200 (each check is a request; the port is ours).
    const probe = async () => {
      while (child.exitCode === null) {
        try {
          const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
          if (ready.status === 200) {
            clearTimeout(timer);
            resolve();
            return;
          }
        } catch { /* not listening yet */ }
        await new Promise((next) => setTimeout(next, 50));
      }
    };
    probe();
    child.stdout.on('data', onOutput);
    child.stderr.on('data', onOutput);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${binary}: ${error.message}`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before serving:\n${log}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      return exited;
    },
  };
}

// One HTTP request to the server; resolves {status, body (JSON or text), headers}.
export async function api(server, method, route, body, {token} = {}) {
  const headers = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(server.url + route, {method, headers, body: payload,
                                                    redirect: 'manual'});
  const text = await response.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch { /* not JSON */ }
  return {status: response.status, body: parsed, headers: response.headers};
}

// Re-evaluates `condition` (async) until it returns a truthy value, which it resolves
// with; fails after WAIT_TIMEOUT_MS of real time, naming `what`. Each check is a
// request or a DOM read, paced by a short pause between checks.
export async function waitUntil(what, condition, timeoutMs = WAIT_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await condition();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// The value of one cell over the API (at the head, or as of `at`).
export async function cellValue(server, sheet, ref, {at, token} = {}) {
  const query = `range=${ref}:${ref}${at === undefined ? '' : `&at=${at}`}`;
  const response = await api(server, 'GET', `/v1/sheets/${sheet}/cells?${query}`, undefined,
                             {token});
  if (response.status !== 200) throw new Error(`cells: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.rows[0][0];
}

export async function createSheet(server, body = {}, options = {}) {
  const response = await api(server, 'POST', '/v1/sheets', body, options);
  if (response.status !== 201) throw new Error(`create: ${JSON.stringify(response.body)}`);
  return response.body.id;
}

export async function append(server, sheet, type, body, options = {}) {
  const response = await api(server, 'POST', `/v1/sheets/${sheet}/entries`, {type, body}, options);
  if (response.status !== 201) throw new Error(`append: ${JSON.stringify(response.body)}`);
  return response.body;
}

// SHEETLOG_CONSOLE_DIR=console: pages get the console's files from that directory rather
// than from the binary (which embeds them at build time), so that a change to the
// console is tried without rebuilding the server. Unset in CI: the binary's own files.
const consoleDir = process.env.SHEETLOG_CONSOLE_DIR;
const CONTENT_TYPES = {'.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html',
                       '.svg': 'image/svg+xml'};

async function serveConsoleFromDisk(context) {
  await context.route(/\/console\/.*/, async (route) => {
    const url = new URL(route.request().url());
    let file = url.pathname.replace(/^\/console\//, '');
    if (!path.extname(file)) file = 'index.html';
    try {
      const body = readFileSync(path.join(consoleDir, file));
      await route.fulfill({status: 200, body,
                           contentType: CONTENT_TYPES[path.extname(file)] || 'application/octet-stream'});
    } catch {
      await route.fulfill({status: 404, body: 'not found'});
    }
  });
}

// A browser with a fresh profile directory, removed by close(). `viewport` and
// `deviceScaleFactor` as Playwright takes them (a phone: {width: 390, height: 844}).
export async function launchBrowser({viewport = {width: 1280, height: 800}, deviceScaleFactor = 1,
                                     permissions = []} = {}) {
  const profile = mkdtempSync(path.join(tmpdir(), 'sheetlog-console-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    acceptDownloads: true,
    viewport,
    deviceScaleFactor,
    permissions,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  if (consoleDir) await serveConsoleFromDisk(context);
  return {
    context,
    // A new tab; page errors and console errors fail `errors`.
    async page() {
      const page = await context.newPage();
      page.errors = [];
      page.on('pageerror', (error) => page.errors.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error' && !/status of 40[19]|status of 404|Failed to load resource/.test(message.text())) {
          page.errors.push(message.text());
        }
      });
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, {recursive: true, force: true});
    },
  };
}

// Waits until the grid cell `ref` shows `text`.
export async function waitForCellText(page, ref, text) {
  await page.waitForFunction(
      ([r, t]) => document.querySelector(`.grid-cell[data-ref="${r}"]`)?.textContent === t,
      [ref, text], {timeout: WAIT_TIMEOUT_MS});
}
