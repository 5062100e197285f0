// Sheets: every sheet with its next seq, last completed snapshot and pending snapshots;
// create one; delete one after a confirmation.
import {del, get, post, query, sheetPath} from '../api.js';
import {badge, busy, button, clear, confirmDialog, el, formatNumber, formatTime, toast}
    from '../ui.js';

const PAGE_SIZE = 50;
const DETAIL_CONCURRENCY = 6;

export function renderSheets(main) {
  let alive = true;
  const tbody = el('tbody');
  const status = el('p.muted', 'Loading…');
  const more = button('More', () => load(nextAfter), '', {hidden: true});
  let nextAfter = '';

  const nameInput = el('input.input#new-sheet-name', {
    name: 'name', placeholder: 'Name (optional)', 'aria-label': 'New sheet name',
    maxlength: 1024,
  });
  const everyInput = el('input.input.input-narrow', {
    name: 'snapshot_every', type: 'number', min: 0, placeholder: '100',
    'aria-label': 'Snapshot every N entries', title: 'Snapshot every N entries (0: never)',
  });
  const createButton = el('button.btn.btn-primary', {type: 'submit'}, 'Create sheet');
  const form = el('form.toolbar', {
    'aria-label': 'Create a sheet',
    onsubmit: (event) => {
      event.preventDefault();
      busy(createButton, async () => {
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
  }, nameInput, everyInput, createButton);

  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Sheets'), form),
                 el('div.card', {},
                    el('table.table#sheets-table', {},
                       el('thead', {}, el('tr', {},
                                          el('th', 'Name'), el('th', 'Id'),
                                          el('th.num', 'Next seq'), el('th', 'Last snapshot'),
                                          el('th.num', 'Pending'), el('th', 'Created'),
                                          el('th', {'aria-label': 'Actions'}))),
                       tbody),
                    status, more)));

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
                  el('td.actions', {}, button('Delete', () => remove(sheet, tr), 'ghost-danger',
                                              {'aria-label': `Delete ${sheet.name || sheet.id}`})));
    tr.fill = (detail) => {
      nextSeq.textContent = formatNumber(detail.next_seq);
      clear(snapshot, detail.last_snapshot ? `seq ${formatNumber(detail.last_snapshot.seq)}`
                                           : badge('none', 'muted'));
      clear(pending, detail.pending_snapshots > 0
                         ? badge(String(detail.pending_snapshots), 'warning')
                         : '0');
    };
    return tr;
  }

  async function remove(sheet, tr) {
    const ok = await confirmDialog(
        'Delete sheet?',
        `Delete “${sheet.name || sheet.id}” with all its entries, snapshots and blobs? ` +
        'This cannot be undone.');
    if (!ok) return;
    try {
      await del(sheetPath(sheet.id));
      tr.remove();
      toast(`Deleted ${sheet.name || sheet.id}`, 'success');
      if (!tbody.children.length) status.textContent = 'No sheets yet.';
    } catch (error) {
      toast(error.message, 'error');
    }
  }

  async function load(after) {
    try {
      const page = await get(`/v1/sheets${query({limit: PAGE_SIZE, after})}`);
      if (!alive) return;
      const rows = page.sheets.map((sheet) => [sheet, row(sheet)]);
      for (const [, tr] of rows) tbody.append(tr);
      nextAfter = page.next || '';
      more.hidden = !page.next;
      status.textContent = tbody.children.length ? '' : 'No sheets yet. Create one above.';
      status.hidden = !!tbody.children.length;
      // Details (next seq, snapshots) a few at a time.
      const queue = [...rows];
      await Promise.all(Array.from({length: DETAIL_CONCURRENCY}, async () => {
        while (alive && queue.length) {
          const [sheet, tr] = queue.shift();
          try {
            tr.fill(await get(sheetPath(sheet.id)));
          } catch (error) {
            tr.fill({next_seq: null, last_snapshot: null, pending_snapshots: 0});
          }
        }
      }));
    } catch (error) {
      if (alive) status.textContent = `Could not list sheets: ${error.message}`;
    }
  }

  load('');
  return () => { alive = false; };
}
