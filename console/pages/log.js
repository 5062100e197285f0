// The log: entries a page at a time (type, seq, segment/num, size, inline or external,
// metadata), Snapshot entries with their pipeline state, and a link from every entry
// to the grid as of it.
import {get, query, sheetPath} from '../api.js';
import {badge, button, clear, el, formatBytes, formatNumber, formatTime, preview}
    from '../ui.js';
import {describeEntry} from './sheet.js';

const PAGE_SIZE = 50;
const METADATA_FIELDS = ['snapshot', 'history', 'pending'];
const STATE_KINDS = {completed: 'success', building: 'info', waiting: 'warning', queued: 'muted'};

function entrySize(entry) {
  if (entry.external) return entry.external.size;
  if (entry.body === null) return 0;
  return new TextEncoder().encode(JSON.stringify(entry.body)).length;
}

export function renderLog(body, ctx) {
  const {id} = ctx;
  let from = Math.max(ctx.info.first_seq, ctx.nextSeq - PAGE_SIZE);
  let followHead = true;
  let snapshotStates = null;  // seq -> state, loaded when a page shows a Snapshot entry
  let alive = true;

  const tbody = el('tbody');
  const rangeLabel = el('span.muted');
  const goInput = el('input.input.input-narrow', {type: 'number', 'aria-label': 'Go to seq',
                                                  placeholder: 'seq'});
  const pager = el('div.toolbar', {},
                   button('Oldest', () => show(ctx.info.first_seq), 'small'),
                   button('Older', () => show(from - PAGE_SIZE), 'small'),
                   button('Newer', () => show(from + PAGE_SIZE), 'small'),
                   button('Newest', () => show(null), 'small'),
                   el('form.inline-form', {
                     onsubmit(event) {
                       event.preventDefault();
                       if (goInput.value !== '') show(Number(goInput.value));
                     },
                   }, goInput, el('button.btn.btn-small', {type: 'submit'}, 'Go')),
                   rangeLabel);
  body.append(el('div.card', {},
                 pager,
                 el('table.table.table-log#log-table', {},
                    el('thead', {}, el('tr', {},
                       el('th.num', 'Seq'), el('th', 'Type'), el('th', 'Segment / num'),
                       el('th', 'Created'), el('th.num', 'Size'), el('th', 'Stored'),
                       el('th', 'Metadata'), el('th', 'Content'), el('th', {'aria-label': 'Actions'}))),
                    tbody)));

  async function states() {
    if (!snapshotStates) {
      const list = await get(sheetPath(id, '/snapshots'));
      snapshotStates = new Map(list.snapshots.map((s) => [s.seq, s.state]));
    }
    return snapshotStates;
  }

  function row(entry, snapshotState) {
    const meta = [];
    for (const field of METADATA_FIELDS) {
      if (entry[field] !== undefined && entry[field] !== null) {
        meta.push(el('div', {}, el('span.muted', `${field}: `), preview(entry[field], 40)));
      }
    }
    if (entry.snapshot_root) {
      meta.push(el('div', {}, el('span.muted', 'root: '), el('code', preview(entry.snapshot_root, 40))));
    }
    const details = el('tr.details-row', {hidden: true},
                       el('td', {colspan: 9},
                          el('pre.json', JSON.stringify(entry, null, 2))));
    const typeCell = el('td', {}, el('span.entry-type', entry.type));
    if (snapshotState) typeCell.append(' ', badge(snapshotState, STATE_KINDS[snapshotState]));
    const tr = el('tr', {dataset: {seq: entry.seq}},
                  el('td.num', formatNumber(entry.seq)),
                  typeCell,
                  el('td', `${entry.segment} / ${entry.num}`),
                  el('td.muted', formatTime(entry.created)),
                  el('td.num', formatBytes(entrySize(entry))),
                  el('td', {}, entry.external ? badge('external', 'info') : badge('inline', 'muted')),
                  el('td.meta', {}, meta.length ? meta : el('span.muted', '—')),
                  el('td.content', {}, describeEntry(entry)),
                  el('td.actions', {},
                     button('JSON', () => { details.hidden = !details.hidden; }, 'small.btn-ghost',
                            {'aria-label': `Show entry ${entry.seq} as JSON`}),
                     el('a.btn.btn-small.btn-ghost', {href: `/console/sheets/${id}?at=${entry.seq}`,
                                                      title: 'Show the grid as of this entry'},
                        'View as of')));
    return [tr, details];
  }

  async function show(start) {
    snapshotStates = null;  // states change without new entries (a build completing)
    followHead = start === null;
    const head = ctx.nextSeq;
    from = followHead ? Math.max(ctx.info.first_seq, head - PAGE_SIZE)
                      : Math.min(Math.max(ctx.info.first_seq, start), Math.max(ctx.info.first_seq, head - 1));
    try {
      const page = await get(sheetPath(id, '/entries') + query({from, limit: PAGE_SIZE}));
      if (!alive) return;
      const entries = page.entries.slice().reverse();  // newest first
      const known = entries.some((e) => e.type === 'Snapshot') ? await states() : new Map();
      clear(tbody, entries.map((e) => row(e, e.type === 'Snapshot' ? known.get(e.seq) || 'queued' : null)));
      const last = page.entries.length ? page.entries[page.entries.length - 1].seq : from;
      rangeLabel.textContent = page.entries.length
                                   ? `seq ${formatNumber(from)}–${formatNumber(last)} of ` +
                                     `${formatNumber(ctx.info.first_seq)}–${formatNumber(ctx.nextSeq - 1)}`
                                   : 'no entries';
    } catch (error) {
      if (alive) clear(tbody, el('tr', {}, el('td', {colspan: 9}, error.message)));
    }
  }

  const listener = () => {
    snapshotStates = null;
    if (followHead) show(null);
  };
  ctx.listeners.add(listener);
  show(null);
  return () => {
    alive = false;
    ctx.listeners.delete(listener);
  };
}
