// One sheet: a header (name, id, next seq, live state) over four tabs — the grid (with
// editing and time travel), the log, import/export, and cost. The header's live feed
// is shared by the tabs.
import {get, post, query, sheetPath} from '../api.js';
import {cellRef, columnName, displayValue, editValue, parseInput, parseRef} from '../a1.js';
import {VirtualGrid} from '../grid.js';
import {LiveFeed} from '../live.js';
import {badge, button, clear, el, formatNumber, formatTime, preview, toast} from '../ui.js';
import {renderCost} from './cost.js';
import {renderLog} from './log.js';
import {renderTransfer} from './transfer.js';

const TABS = [
  ['grid', 'Grid'],
  ['log', 'Log'],
  ['files', 'Import / export'],
  ['cost', 'Cost'],
];

// Entry types that never change cells: an edit whose expect_seq was overtaken only by
// these is retried rather than reported as a conflict.
const SYSTEM_TYPES = new Set(['Snapshot', 'EndSegment']);

export function renderSheet(main, {id, tab, params}) {
  const page = el('section.page.page-sheet');
  main.append(page);
  const ctx = {
    id,
    info: null,
    nextSeq: null,
    listeners: new Set(),  // (entries) => void, for the tab shown
    feed: null,
  };
  let tabCleanup = null;
  let alive = true;

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
  const tabs = el('nav.tabs', {'aria-label': 'Sheet views'},
                  TABS.map(([key, label]) => el('a.tab', {
                    href: `/console/sheets/${id}${key === 'grid' ? '' : `/${key}`}`,
                    'aria-current': key === tab ? 'page' : false,
                  }, label)));
  const body = el('div.sheet-body');
  page.append(header, tabs, body);

  function setNextSeq(next) {
    ctx.nextSeq = next;
    seqLabel.textContent = formatNumber(next);
  }

  (async () => {
    try {
      ctx.info = await get(sheetPath(id));
    } catch (error) {
      if (!alive) return;
      clear(body, el('div.notice.notice-error', {role: 'alert'},
                     error.status === 404 ? `No sheet ${id}.` : error.message));
      return;
    }
    if (!alive) return;
    title.textContent = ctx.info.name || '(unnamed sheet)';
    document.title = `${ctx.info.name || id} · sheetlog`;
    setNextSeq(ctx.info.next_seq);
    ctx.feed = new LiveFeed(id, ctx.info.next_seq, {
      onEntries(entries) {
        setNextSeq(Math.max(ctx.nextSeq, entries[entries.length - 1].seq + 1));
        liveDot.classList.add('live-on');
        liveLabel.textContent = 'live';
        for (const listener of ctx.listeners) listener(entries);
      },
      onError(error) {
        liveDot.classList.remove('live-on');
        liveLabel.textContent = `offline: ${error.message}`;
      },
      onTransport(transport) {
        liveBox.dataset.transport = transport;
        liveDot.classList.add('live-on');
        liveLabel.textContent = transport === 'stream' ? 'live' : 'live (polling)';
        liveDot.title = transport === 'stream' ? 'Receiving the sheet\u2019s event stream'
                                               : 'Polling for new entries every second';
      },
      onGone() {
        toast('The log was truncated past this view; reloading.', 'warning');
        location.reload();
      },
    });
    const render = {grid: renderGrid, log: renderLog, files: renderTransfer, cost: renderCost}[tab];
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

// A one-line description of an entry, for the time-travel banner and the log.
export function describeEntry(entry) {
  const b = entry.body || {};
  switch (entry.type) {
    case 'SetCell':
      return `SetCell ${b.ref} = ${preview(displayValue(b.value), 60)}` +
             (b.format ? ` (format ${b.format})` : '');
    case 'SetCells':
      if (b.cells) return `SetCells ${Object.keys(b.cells).length} cells`;
      return `SetCells ${(b.rows || []).length} rows at ${b.at || 'A1'}`;
    case 'SetCellValueAndFormat':
      return `SetCellValueAndFormat ${cellRef(b.row + 1, b.column + 1)} = ` +
             preview(displayValue(b.value), 60);
    case 'InsertRows':
      return `InsertRows ${b.count || 1} after row ${b.after}`;
    case 'DeleteRows':
      return `DeleteRows ${b.count || 1} at row ${b.at}`;
    case 'InsertColumns':
      return `InsertColumns ${b.count || 1} after column ${b.after || 0}`;
    case 'DeleteColumns':
      return `DeleteColumns ${b.count || 1} at column ${b.at}`;
    case 'Import':
      return `Import ${b.format || ''} ${b.mode || 'replace'} at ${b.at || 'A1'}`;
    case 'Snapshot':
      return entry.snapshot_root ? 'Snapshot (completed)' : 'Snapshot (not built yet)';
    default:
      if (entry.body === null && entry.external) return `${entry.type} (body in ${entry.external.key})`;
      return `${entry.type} ${entry.body === null ? '' : preview(entry.body, 60)}`;
  }
}

// The cells an entry sets, as {row, column}, for highlighting; [] for structural ones.
function cellsOf(entry) {
  const b = entry.body || {};
  if (entry.type === 'SetCell') {
    const ref = parseRef(b.ref || '');
    return ref ? [ref] : [];
  }
  if (entry.type === 'SetCellValueAndFormat') return [{row: b.row + 1, column: b.column + 1}];
  if (entry.type === 'SetCells' && b.cells) {
    return Object.keys(b.cells).map(parseRef).filter(Boolean).slice(0, 500);
  }
  if (entry.type === 'SetCells' && b.rows) {
    const at = parseRef(b.at || 'A1');
    const out = [];
    b.rows.slice(0, 100).forEach((r, i) => (r || []).slice(0, 50).forEach((v, j) => {
      out.push({row: at.row + i, column: at.column + j});
    }));
    return out;
  }
  return [];
}

function renderGrid(body, ctx, params) {
  const {id} = ctx;
  const state = {at: null, ownSeqs: new Set()};
  const initialAt = params.get('at');

  // Formula bar: the active cell's reference and its content (a formula as text).
  const refBox = el('input.input.ref-box', {
    'aria-label': 'Go to cell', value: 'A1', spellcheck: 'false',
    onkeydown(event) {
      if (event.key !== 'Enter') return;
      const ref = parseRef(refBox.value);
      if (ref) {
        grid.setActive(ref.row, ref.column);
        grid.focus();
      } else {
        toast(`'${refBox.value}' is not a cell reference`, 'warning');
      }
    },
  });
  const formulaInput = el('input.input.formula-input', {
    'aria-label': 'Cell content', spellcheck: 'false', placeholder: 'Value or =formula',
    onkeydown(event) {
      if (event.key === 'Enter') {
        event.preventDefault();
        const {row, column} = grid.active;
        commit(row, column, formulaInput.value);
        grid.focus();
      } else if (event.key === 'Escape') {
        showActive(grid.active.row, grid.active.column, grid.cellAt(grid.active.row, grid.active.column));
        grid.focus();
      }
    },
  });
  const cellInfo = el('span.cell-info');
  const structure = el('div.button-group', {role: 'group', 'aria-label': 'Rows and columns'},
                       button('Insert row above', () => structural('InsertRows', -1), 'small'),
                       button('Insert row below', () => structural('InsertRows', 0), 'small'),
                       button('Delete row', () => structural('DeleteRows'), 'small'),
                       button('Insert column left', () => structural('InsertColumns', -1), 'small'),
                       button('Insert column right', () => structural('InsertColumns', 0), 'small'),
                       button('Delete column', () => structural('DeleteColumns'), 'small'));
  const formulaBar = el('div.formula-bar', {}, refBox, el('span.fx', 'fx'), formulaInput,
                        cellInfo);

  // History bar: the grid as of any seq of the retained log.
  const slider = el('input.history-slider', {
    type: 'range', min: ctx.info.first_seq, max: Math.max(ctx.info.first_seq, ctx.nextSeq - 1),
    value: ctx.nextSeq - 1, 'aria-label': 'History: show the sheet as of seq',
    oninput: () => previewSeq(Number(slider.value)),
    onchange: () => travelTo(Number(slider.value)),
  });
  const seqInput = el('input.input.input-narrow.history-seq', {
    type: 'number', 'aria-label': 'Seq to show', min: ctx.info.first_seq,
    onkeydown(event) {
      if (event.key === 'Enter') travelTo(Number(seqInput.value));
    },
  });
  const liveButton = button('Back to live', () => travelTo(null), 'small', {hidden: true});
  const historyBar = el('div.history-bar', {},
                        el('span.history-label', 'History'),
                        button('◀', () => travelTo((state.at ?? ctx.nextSeq - 1) - 1),
                               'small.btn-icon', {'aria-label': 'Previous seq'}),
                        slider,
                        button('▶', () => travelTo((state.at ?? ctx.nextSeq - 1) + 1),
                               'small.btn-icon', {'aria-label': 'Next seq'}),
                        seqInput, liveButton);
  const banner = el('div.notice.notice-history#history-banner', {hidden: true, role: 'status'});
  const conflict = el('div.notice.notice-warning#conflict-notice', {hidden: true, role: 'alert'});
  const gridHost = el('div.grid-host');
  body.append(el('div.grid-toolbar', {}, formulaBar, structure), historyBar, banner, conflict,
              gridHost);

  const grid = new VirtualGrid(gridHost, {
    label: `Sheet ${ctx.info.name || id}`,
    loadTile: (range, signal) =>
        get(sheetPath(id, '/cells') + query({range, at: state.at}), {signal}),
    onCommit: (row, column, text) => commit(row, column, text),
    onActiveChange: showActive,
  });

  function showActive(row, column, cell) {
    refBox.value = cellRef(row, column);
    formulaInput.value = cell ? editValue(cell.value) : '';
    const parts = [];
    if (cell && cell.cached !== null && cell.cached !== undefined) {
      parts.push(badge(`= ${displayValue(cell.cached)}`, 'info'));
    }
    if (cell && cell.format) parts.push(badge(`format ${cell.format}`, 'muted'));
    clear(cellInfo, parts);
  }

  function syncHistoryBar() {
    const head = ctx.nextSeq - 1;
    slider.max = Math.max(ctx.info.first_seq, head);
    if (state.at === null) {
      slider.value = head;
      seqInput.value = head;
    }
    seqInput.max = head;
  }

  // Appends `entry` with expect_seq = the next seq this page knows. A conflict caused
  // only by system entries (a Snapshot the server appended) is retried; any other is
  // shown, and the grid refreshed.
  async function append(entry) {
    for (let attempt = 0; attempt < 4; attempt++) {
      const expect = ctx.nextSeq;
      try {
        const result = await post(sheetPath(id, '/entries'), {...entry, expect_seq: expect});
        state.ownSeqs.add(result.seq);
        ctx.nextSeq = Math.max(ctx.nextSeq, result.next_seq || result.seq + 1);
        ctx.feed.refresh();
        conflict.hidden = true;
        return result;
      } catch (error) {
        if (error.status !== 409 || typeof error.details.next_seq !== 'number') throw error;
        const next = error.details.next_seq;
        const between = await get(sheetPath(id, '/entries') +
                                  query({from: expect, to: next, limit: 1000}));
        ctx.nextSeq = Math.max(ctx.nextSeq, next);
        const foreign = between.entries.filter((e) => !SYSTEM_TYPES.has(e.type));
        if (foreign.length === 0 && between.complete) continue;
        grid.invalidate();
        ctx.feed.refresh();
        conflict.hidden = false;
        clear(conflict, `Another client changed the sheet first (seq ${expect}` +
                        `${next - 1 > expect ? `–${next - 1}` : ''}): your edit was not ` +
                        'applied. The grid has been refreshed; make the edit again if it ' +
                        'is still wanted.',
              button('Dismiss', () => { conflict.hidden = true; }, 'small'));
        toast('Conflict: another client changed the sheet first. Refreshed.', 'warning');
        return null;
      }
    }
    throw new Error('the sheet keeps changing; try again');
  }

  async function commit(row, column, text) {
    if (state.at !== null) return;
    const value = parseInput(text);
    const before = grid.cellAt(row, column);
    grid.setLocalValue(row, column, value);
    try {
      const done = await append({type: 'SetCell', body: {ref: cellRef(row, column), value}});
      if (!done && before) grid.invalidate();
    } catch (error) {
      toast(`Could not set ${cellRef(row, column)}: ${error.message}`, 'error');
      grid.invalidate();
    }
  }

  async function structural(type, offset) {
    if (state.at !== null) {
      toast('Read-only: go back to live to edit', 'warning');
      return;
    }
    const {row, column} = grid.active;
    const bodies = {
      InsertRows: () => ({after: row + offset}),
      DeleteRows: () => ({at: row}),
      InsertColumns: () => ({after: column + offset === 0 ? 0 : columnName(column + offset)}),
      DeleteColumns: () => ({at: columnName(column)}),
    };
    try {
      const done = await append({type, body: bodies[type]()});
      if (done) {
        grid.invalidate();
        toast(`${type} appended at seq ${done.seq}`, 'success');
      }
    } catch (error) {
      toast(`${type} failed: ${error.message}`, 'error');
    }
  }

  let previewTimer = null;
  function previewSeq(seq) {
    seqInput.value = seq;
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => travelTo(seq), 250);
  }

  // Shows the grid as of `seq` (read-only, with the entry at seq), or live for null.
  async function travelTo(seq) {
    clearTimeout(previewTimer);
    const head = ctx.nextSeq - 1;
    if (seq !== null) seq = Math.min(Math.max(seq, ctx.info.first_seq), head);
    if (seq === state.at) return;
    state.at = seq;
    const url = new URL(location.href);
    if (seq === null) url.searchParams.delete('at');
    else url.searchParams.set('at', seq);
    history.replaceState(null, '', url.pathname + url.search);
    grid.setReadOnly(seq !== null);
    grid.invalidate();
    liveButton.hidden = seq === null;
    historyBar.classList.toggle('history-active', seq !== null);
    formulaInput.readOnly = seq !== null;
    if (seq === null) {
      banner.hidden = true;
      syncHistoryBar();
      return;
    }
    slider.value = seq;
    seqInput.value = seq;
    banner.hidden = false;
    clear(banner, el('strong', `Read-only: as of seq ${formatNumber(seq)}`), ' · loading entry…');
    try {
      const entry = await get(sheetPath(id, `/entries/${seq}`));
      if (state.at !== seq) return;
      clear(banner,
            el('strong', `Read-only: the sheet as of seq ${formatNumber(seq)}`),
            el('span.banner-entry', {}, ' · changed by ', el('code', describeEntry(entry)),
               ` at ${formatTime(entry.created)}`),
            button('Back to live', () => travelTo(null), 'small'));
      const changed = cellsOf(entry);
      if (changed.length) grid.flash(changed);
    } catch (error) {
      if (state.at === seq) clear(banner, `As of seq ${seq}: ${error.message}`);
    }
  }

  ctx.listeners.add((entries) => {
    syncHistoryBar();
    if (state.at !== null) return;
    const changed = [];
    for (const entry of entries) {
      if (state.ownSeqs.delete(entry.seq)) continue;
      changed.push(...cellsOf(entry));
    }
    grid.invalidate();
    if (changed.length) grid.flash(changed);
  });

  syncHistoryBar();
  if (initialAt !== null && initialAt !== '') travelTo(Number(initialAt));
  grid.focus();
  return () => grid.destroy();
}
