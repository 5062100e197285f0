// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The console's entry point: the page shell, client-side routing and the pages.
// Every path under /console/ serves index.html; this decides what it shows:
//   /console/                     sheets
//   /console/sheets/{id}[/tab]    one sheet: grid (with time travel), log, files, cost
//   /console/tables[/name]        the tables behind the API (read-only browser)
//   /console/pipeline             snapshots, queues, change feed, jobs, verify
//   /console/functions            the invocation log of the runtime's workers
//   /console/blobs?prefix=        the blob store
//   /console/controls             clock, fault points, reset (when the flags allow), health
// On a narrow screen the sections scroll sideways; an arrow at either edge shows that
// there are more of them that way (updateNavHints).
import {renderBlobs} from './pages/blobs.js';
import {renderControls} from './pages/controls.js';
import {renderFunctions} from './pages/functions.js';
import {renderPipeline} from './pages/pipeline.js';
import {renderSheet} from './pages/sheet.js';
import {renderSheets} from './pages/sheets.js';
import {renderTables} from './pages/tables.js';
import {el, clear, navOverflow} from './ui.js';

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
/** @type {(() => void)|null} */
let cleanup = null;

/**
 * @param {string} path
 * @param {{replace?: boolean}} [options]
 */
export function navigate(path, {replace = false} = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  route();
}

function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const url = new URL(location.href);
  const parts = url.pathname.replace(/^\/console\/?/, '').split('/').filter(Boolean)
                    .map(decodeURIComponent);
  let section = 'sheets';
  clear(main);
  if (parts.length === 0) {
    document.title = 'Sheets · sheetlog';
    cleanup = renderSheets(main);
  } else if (parts[0] === 'sheets' && parts[1]) {
    cleanup = renderSheet(main, {id: parts[1], tab: parts[2] || 'grid', params: url.searchParams});
  } else if (parts[0] === 'pipeline') {
    section = 'pipeline';
    document.title = 'Pipeline · sheetlog';
    cleanup = renderPipeline(main);
  } else if (parts[0] === 'blobs') {
    section = 'blobs';
    document.title = 'Blobs · sheetlog';
    cleanup = renderBlobs(main, {prefix: url.searchParams.get('prefix') || ''});
  } else if (parts[0] === 'tables') {
    section = 'tables';
    document.title = `${parts[1] ? `${parts[1]} · ` : ''}Tables · sheetlog`;
    cleanup = renderTables(main, {name: parts[1] || '', params: url.searchParams});
  } else if (parts[0] === 'functions') {
    section = 'functions';
    document.title = 'Functions · sheetlog';
    cleanup = renderFunctions(main);
  } else if (parts[0] === 'controls') {
    section = 'controls';
    document.title = 'Controls · sheetlog';
    cleanup = renderControls(main);
  } else {
    document.title = 'Not found · sheetlog';
    main.append(el('section.page', {}, el('h1', 'Not found'),
                   el('p', {}, 'No console page at ', el('code', url.pathname), '. ',
                      el('a', {href: '/console/'}, 'Back to the sheets'))));
  }
  for (const link of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('.nav-link'))) {
    if (link.dataset.section === section) {
      link.setAttribute('aria-current', 'page');
      showNavLink(link);
    } else {
      link.removeAttribute('aria-current');
    }
  }
  updateNavHints();
}

const nav = /** @type {HTMLElement} */ (document.querySelector('.nav'));
const navMoreLeft = /** @type {HTMLElement} */ (document.querySelector('.nav-more-left'));
const navMoreRight = /** @type {HTMLElement} */ (document.querySelector('.nav-more-right'));

function updateNavHints() {
  const more = navOverflow(nav);
  navMoreLeft.hidden = !more.left;
  navMoreRight.hidden = !more.right;
}

// Scrolls the navigation (only it) so that the current section's link is in view.
/** @param {HTMLElement} link */
function showNavLink(link) {
  const start = link.getBoundingClientRect().left - nav.getBoundingClientRect().left + nav.scrollLeft;
  const end = start + link.offsetWidth;
  if (start < nav.scrollLeft) nav.scrollLeft = start;
  else if (end > nav.scrollLeft + nav.clientWidth) nav.scrollLeft = end - nav.clientWidth;
}

nav.addEventListener('scroll', updateNavHints, {passive: true});
new ResizeObserver(updateNavHints).observe(nav);

// Same-origin links to console pages navigate in place.
document.addEventListener('click', (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
      event.shiftKey || event.altKey) {
    return;
  }
  const link = /** @type {HTMLAnchorElement|null} */ (
    /** @type {Element} */ (event.target).closest('a[href]'));
  if (!link || link.hasAttribute('download') || link.target) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/console/')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', route);

async function showVersion() {
  const label = /** @type {HTMLElement} */ (document.getElementById('server-version'));
  try {
    const response = await fetch('/healthz');
    const health = await response.json();
    label.textContent = `sheetlog ${health.version}`;
  } catch {
    label.textContent = 'server unreachable';
  }
}

showVersion();
route();
