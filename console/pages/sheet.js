// @ts-check
// SPDX-License-Identifier: Apache-2.0
// One sheet: a header (name, id, next seq, live state) over four tabs — the grid (with
// editing and time travel), the log, import/export, and cost. The header's live feed
// is shared by the tabs. While the grid shows the past (?at=seq), the header says which
// seq is shown instead of "live", and the tabs keep that view: Import refuses to write
// while it lasts.
import {get, sheetPath} from '../api.js';
import {formatNumber} from '../format.js';
import {LiveFeed} from '../live.js';
import {clear, el, toast} from '../ui.js';
import {renderCost} from './cost.js';
import {renderGridTab} from './grid_tab.js';
import {renderLog} from './log.js';
import {renderTransfer} from './transfer.js';

const TABS = [
  ['grid', 'Grid'],
  ['log', 'Log'],
  ['files', 'Import / export'],
  ['cost', 'Cost'],
];

/**
 * What a sheet's tabs share: the sheet, the next seq the page knows, the live feed, the
 * listeners of its entries, and the seq shown when it is the past (null: live), which the
 * grid tab sets with setViewAt.
 * @typedef {{id: string, info: any, nextSeq: number, listeners: Set<(entries: any[]) => void>,
 *            feed: LiveFeed|null, viewAt: number|null,
 *            setViewAt: (seq: number|null) => void}} SheetContext
 */

/**
 * The seq of `?at=` (a view of the past), or null.
 * @param {string|null} text
 */
export function atParam(text) {
  if (text === null || !/^\d+$/.test(text.trim())) return null;
  return Number(text);
}

/**
 * @param {HTMLElement} main
 * @param {{id: string, tab: string, params: URLSearchParams}} route
 */
export function renderSheet(main, {id, tab, params}) {
  const page = el('section.page.page-sheet');
  main.append(page);
  /** @type {SheetContext} */
  const ctx = {
    id,
    info: null,
    nextSeq: 0,
    listeners: new Set(),  // (entries) => void, for the tab shown
    feed: null,
    viewAt: atParam(params.get('at')),
    setViewAt: (seq) => {
      ctx.viewAt = seq;
      showLive();
      syncTabLinks();
    },
  };
  /** @type {(() => void)|null} */
  let tabCleanup = null;
  let alive = true;
  let liveText = 'connecting';  // what the feed says (shown when the view is live)
  let liveOn = false;

  const title = el('h1.sheet-title', '…');
  const seqLabel = el('span.stat-value#next-seq', '…');
  const liveDot = el('span.live-dot');
  const liveLabel = el('span.live-label', 'connecting');
  const liveBox = el('div.live#live-state', {}, liveDot, liveLabel);
  const header = el('div.page-head', {},
                    el('div', {},
                       el('nav.crumbs', {'aria-label': 'Breadcrumb'},
                          el('a', {href: '/console/'}, 'Sheets'), ' / '),
                       title,
                       el('code.id.sheet-id', id)),
                    el('div.sheet-stats', {},
                       el('div.stat', {}, el('span.stat-label', 'Next seq'), seqLabel),
                       liveBox));
  const tabLinks = TABS.map(([key, label]) => el('a.tab', {
    href: `/console/sheets/${id}${key === 'grid' ? '' : `/${key}`}`,
    'aria-current': key === tab ? 'page' : false,
    dataset: {tab: key},
  }, label));
  const tabs = el('nav.tabs', {'aria-label': 'Sheet views'}, tabLinks);
  const body = el('div.sheet-body');
  page.append(header, tabs, body);
  showLive();
  syncTabLinks();

  /** @param {number} next */
  function setNextSeq(next) {
    ctx.nextSeq = next;
    seqLabel.textContent = formatNumber(next);
  }

  // The tabs keep the view of the past (?at=seq) while there is one.
  function syncTabLinks() {
    for (const link of tabLinks) {
      const key = link.dataset.tab;
      link.setAttribute('href', `/console/sheets/${id}${key === 'grid' ? '' : `/${key}`}` +
                                (ctx.viewAt !== null ? `?at=${ctx.viewAt}` : ''));
    }
  }

  /**
   * @param {string} text
   * @param {boolean} on
   */
  function setLive(text, on) {
    liveText = text;
    liveOn = on;
    showLive();
  }

  // "live" (or offline, polling...), except while the past is shown: then the seq shown.
  function showLive() {
    const past = ctx.viewAt !== null;
    liveLabel.textContent = past ? `viewing seq ${formatNumber(ctx.viewAt)} · read-only` : liveText;
    liveDot.classList.toggle('live-on', !past && liveOn);
    liveDot.classList.toggle('live-past', past);
    if (past) liveBox.dataset.viewing = String(ctx.viewAt);
    else delete liveBox.dataset.viewing;
  }

  (async () => {
    try {
      ctx.info = await get(sheetPath(id));
    } catch (error) {
      if (!alive) return;
      const missing = error.status === 404;
      setLive(missing ? 'no such sheet' : 'offline', false);
      liveBox.dataset.transport = 'none';
      clear(body, el('div.notice.notice-error', {role: 'alert'},
                     missing ? `No sheet ${id}: it was deleted or never existed. ` : error.message,
                     missing ? el('a', {href: '/console/'}, 'Back to the sheets') : null));
      return;
    }
    if (!alive) return;
    title.textContent = ctx.info.name || '(unnamed sheet)';
    document.title = `${ctx.info.name || id} · sheetlog`;
    setNextSeq(ctx.info.next_seq);
    // The head is live, whatever the address says.
    if (ctx.viewAt !== null && ctx.viewAt >= ctx.nextSeq - 1) ctx.setViewAt(null);
    let transport = '';
    ctx.feed = new LiveFeed(id, ctx.info.next_seq, {
      onEntries(entries) {
        setNextSeq(Math.max(ctx.nextSeq, entries[entries.length - 1].seq + 1));
        setLive(transport === 'polling' ? 'live (polling)' : 'live', true);
        for (const listener of ctx.listeners) listener(entries);
      },
      onError(error) {
        setLive(`offline: ${error.message}`, false);
      },
      onTransport(name) {
        transport = name;
        liveBox.dataset.transport = name;
        setLive(name === 'stream' ? 'live' : 'live (polling)', true);
        liveDot.title = name === 'stream' ? 'Receiving the sheet\u2019s event stream'
                                          : 'Polling for new entries every second';
      },
      onGone(reason) {
        if (reason === 'deleted') {
          setLive('sheet deleted', false);
          liveBox.dataset.transport = 'none';
          if (tabCleanup) tabCleanup();
          tabCleanup = null;
          clear(body, el('div.notice.notice-error#sheet-gone', {role: 'alert'},
                         'This sheet was deleted (by another client or an operator). ',
                         el('a', {href: '/console/'}, 'Back to the sheets')));
          return;
        }
        toast('The log was truncated past this view; reloading.', 'warning');
        location.reload();
      },
    });
    /** @type {Record<string, (body: HTMLElement, ctx: SheetContext, params: URLSearchParams) => () => void>} */
    const renders = {grid: renderGridTab, log: renderLog, files: renderTransfer, cost: renderCost};
    const render = renders[tab];
    if (!render) {
      body.append(el('p', `No tab '${tab}'.`));
      return;
    }
    tabCleanup = render(body, ctx, params);
  })();

  return () => {
    alive = false;
    if (tabCleanup) tabCleanup();
    if (ctx.feed) ctx.feed.close();
  };
}
