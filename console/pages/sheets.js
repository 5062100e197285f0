// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Sheets: every sheet with its next seq, last snapshot and pending snapshots; search by
// name or id, sort by name, created or size (next seq); create one; delete one after a
// confirmation. The list is read a page at a time (GET /v1/sheets orders by id); a
// search or a sort covers the pages read so far, and "Load all" reads the rest.
import {del, get, post, query, sheetPath} from '../api.js';
import {badge, busy, button, clear, confirmDialog, el, formatNumber, formatTime, toast}
  from '../ui.js';

const PAGE_SIZE = 100;
const DETAIL_CONCURRENCY = 6;

/**
 * @typedef {{id: string, name: string, created: number, next_seq?: number|null,
 *            last_snapshot?: any, pending_snapshots?: number, row?: any}} SheetRow
 */

/**
 * Rows in the order of a sort key: name (case-insensitive, then id), created, size
 * (next seq; unknown last), each ascending or descending.
 * @param {SheetRow[]} rows
 * @param {'name'|'created'|'size'} key
 * @param {boolean} descending
 * @returns {SheetRow[]}
 */
export function sortSheets(rows, key, descending) {
  const value = (/** @type {SheetRow} */ r) => (key === 'name' ? (r.name || '').toLowerCase()
    : key === 'created' ? r.created : (r.next_seq ?? -1));
  const sorted = rows.slice().sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x < y) return -1;
    if (x > y) return 1;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
  return descending ? sorted.reverse() : sorted;
}

/**
 * Whether a sheet matches a search: every word of `text` in its name or id.
 * @param {SheetRow} sheet
 * @param {string} text
 */
export function matchesSearch(sheet, text) {
  const haystack = `${sheet.name || ''} ${sheet.id}`.toLowerCase();
  return text.toLowerCase().split(/\s+/).filter(Boolean).every((w) => haystack.includes(w));
}

/** @param {HTMLElement} main */
export function renderSheets(main) {
  let alive = true;
  /** @type {SheetRow[]} */
  let sheets = [];
  let nextAfter = '';
  /** @type {{key: 'name'|'created'|'size', descending: boolean}} */
  const sort = {key: 'created', descending: true};
  const tbody = el('tbody');
  const status = el('p.muted#sheets-status', 'Loading…');
  const more = button('Load more', () => load(nextAfter), '', {hidden: true});
  const loadAll = button('Load all', () => loadEverything(), '', {hidden: true});

  const nameInput = el('input.input#new-sheet-name', {
    name: 'name', placeholder: 'e.g. budget', maxlength: 1024, autocomplete: 'off',
  });
  const everyInput = el('input.input.input-narrow#new-sheet-every', {
    name: 'snapshot_every', type: 'number', min: 0, placeholder: '100', inputmode: 'numeric',
  });
  const createButton = el('button.btn.btn-primary', {type: 'submit'}, 'Create sheet');
  const form = el('form.create-form', {
    'aria-label': 'Create a sheet',
    onsubmit: (/** @type {Event} */ event) => {
      event.preventDefault();
      busy(createButton, async () => {
        /** @type {Record<string, any>} */
        const body = {};
        if (nameInput.value.trim()) body.name = nameInput.value.trim();
        if (everyInput.value !== '') body.snapshot_every = Number(everyInput.value);
        const sheet = await post('/v1/sheets', body);
        toast(`Created sheet ${sheet.name || sheet.id}`, 'success');
        nameInput.value = '';
        history.pushState(null, '', `/console/sheets/${sheet.id}`);
        dispatchEvent(new PopStateEvent('popstate'));
      });
    },
  },
  el('div.field', {}, el('label', {for: 'new-sheet-name'}, 'New sheet name'), nameInput),
  el('div.field', {}, el('label', {for: 'new-sheet-every', title: '0: the client manages snapshots'},
                         'Snapshot every N entries'), everyInput),
  el('div.field.field-button', {}, createButton));

  const searchInput = el('input.input#sheet-search', {
    type: 'search', placeholder: 'name or id', autocomplete: 'off',
    oninput: () => show(),
  });
  const sortHeads = /** @type {Record<string, HTMLElement>} */ ({});
  /** @param {'name'|'created'|'size'} key @param {string} label @param {string} [cls] */
  const sortHead = (key, label, cls = 'th') => {
    const head = el(`${cls}.sortable`, {'aria-sort': 'none', scope: 'col'},
                    el('button.sort-button', {type: 'button', onclick: () => setSort(key)}, label));
    sortHeads[key] = head;
    return head;
  };

  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Sheets'), form),
                 el('div.card', {},
                    el('div.toolbar.list-toolbar', {},
                       el('label', {for: 'sheet-search'}, 'Search'), searchInput,
                       el('span.muted.small#sheets-count')),
                    el('div.table-wrap', {},
                       el('table.table#sheets-table', {},
                          el('thead', {}, el('tr', {},
                                             sortHead('name', 'Name'), el('th', {scope: 'col'}, 'Id'),
                                             sortHead('size', 'Next seq', 'th.num'),
                                             el('th', {scope: 'col'}, 'Last snapshot'),
                                             el('th.num', {scope: 'col'}, 'Pending'),
                                             sortHead('created', 'Created'),
                                             el('th', {'aria-label': 'Actions'}))),
                          tbody)),
                    status, el('div.toolbar', {}, more, loadAll))));

  /** @param {'name'|'created'|'size'} key */
  function setSort(key) {
    if (sort.key === key) sort.descending = !sort.descending;
    else {
      sort.key = key;
      sort.descending = key !== 'name';
    }
    show();
  }

  /** @param {SheetRow} sheet */
  function row(sheet) {
    const nextSeq = el('td.num', '…');
    const snapshot = el('td', '…');
    const pending = el('td.num', '…');
    const link = el('a', {href: `/console/sheets/${sheet.id}`}, sheet.name || '(unnamed)');
    const tr = el('tr', {dataset: {sheet: sheet.id}},
                  el('td', {}, link),
                  el('td', {}, el('code.id', sheet.id)),
                  nextSeq, snapshot, pending,
                  el('td.muted', formatTime(sheet.created)),
                  el('td.actions', {}, button('Delete', () => remove(sheet), 'ghost-danger',
                                              {'aria-label': `Delete ${sheet.name || sheet.id}`})));
    tr.fill = () => {
      nextSeq.textContent = formatNumber(sheet.next_seq);
      clear(snapshot, sheet.last_snapshot ? `seq ${formatNumber(sheet.last_snapshot.seq)}`
        : badge('none', 'muted'));
      clear(pending, (sheet.pending_snapshots || 0) > 0
        ? badge(String(sheet.pending_snapshots), 'warning') : '0');
    };
    return tr;
  }

  function show() {
    const text = searchInput.value.trim();
    const shown = sortSheets(sheets.filter((s) => matchesSearch(s, text)), sort.key, sort.descending);
    clear(tbody, shown.map((s) => s.row));
    for (const [key, head] of Object.entries(sortHeads)) {
      head.setAttribute('aria-sort', key !== sort.key ? 'none' : sort.descending ? 'descending' : 'ascending');
    }
    const count = document.getElementById('sheets-count');
    if (count) {
      count.textContent = text ? `${shown.length} of ${sheets.length} loaded match`
        : `${sheets.length} sheet${sheets.length === 1 ? '' : 's'}${nextAfter ? ' loaded' : ''}`;
    }
    status.hidden = shown.length > 0;
    status.textContent = sheets.length === 0 ? 'No sheets yet. Create one above.'
      : 'No loaded sheet matches the search.' + (nextAfter ? ' Load more to search further.' : '');
  }

  /** @param {SheetRow} sheet */
  async function remove(sheet) {
    const ok = await confirmDialog(
      'Delete sheet?',
      `Delete “${sheet.name || sheet.id}” with all its entries, snapshots and blobs? ` +
      'This cannot be undone.');
    if (!ok) return;
    try {
      await del(sheetPath(sheet.id));
      sheets = sheets.filter((s) => s !== sheet);
      show();
      toast(`Deleted ${sheet.name || sheet.id}`, 'success');
    } catch (error) {
      toast(error.message, 'error');
    }
  }

  /** @param {string} after */
  async function load(after) {
    try {
      const page = await get(`/v1/sheets${query({limit: PAGE_SIZE, after})}`);
      if (!alive) return false;
      /** @type {SheetRow[]} */
      const fresh = page.sheets.map((/** @type {SheetRow} */ s) => ({...s, next_seq: null}));
      for (const sheet of fresh) sheet.row = row(sheet);
      sheets.push(...fresh);
      nextAfter = page.next || '';
      more.hidden = !page.next;
      loadAll.hidden = !page.next;
      show();
      // Details (next seq, snapshots) a few at a time.
      const queue = [...fresh];
      await Promise.all(Array.from({length: DETAIL_CONCURRENCY}, async () => {
        while (alive && queue.length) {
          const sheet = /** @type {SheetRow} */ (queue.shift());
          try {
            Object.assign(sheet, await get(sheetPath(sheet.id)));
          } catch {
            // deleted meanwhile, or unreachable: the row stays with what it has
          }
          sheet.row?.fill();
        }
      }));
      if (alive && sort.key === 'size') show();
      return true;
    } catch (error) {
      if (alive) {
        status.hidden = false;
        status.textContent = `Could not list sheets: ${error.message}`;
      }
      return false;
    }
  }

  async function loadEverything() {
    loadAll.disabled = true;
    while (alive && nextAfter && await load(nextAfter)) { /* page by page */ }
    loadAll.disabled = false;
  }

  load('');
  return () => { alive = false; };
}
