// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The log: entries a page at a time (type, seq, segment/num, size, inline or external,
// metadata), Snapshot entries with their pipeline state, and a link from every entry
// to the grid as of it.
import {get, query, sheetPath} from '../api.js';
import {badge, button, clear, el, formatBytes, formatNumber, formatTime, preview}
    from '../ui.js';
import {describeEntry} from '../entries.js';
import {deadLetteredSnapshots} from '../snapshot_jobs.js';

const PAGE_SIZE = 50;
const METADATA_FIELDS = ['snapshot', 'history', 'pending'];
/** @type {Record<string, string>} */
const STATE_KINDS = {completed: 'success', building: 'info', waiting: 'warning', queued: 'muted',
                     'dead-lettered': 'danger'};

/** @param {any} entry */
function entrySize(entry) {
  if (entry.external) return entry.external.size;
  if (entry.body === null) return 0;
  return new TextEncoder().encode(JSON.stringify(entry.body)).length;
}

/**
 * @param {HTMLElement} body
 * @param {any} ctx the sheet page's context
 */
export function renderLog(body, ctx) {
  const {id} = ctx;
  let from = Math.max(ctx.info.first_seq, ctx.nextSeq - PAGE_SIZE);
  let followHead = true;
  /** @type {Map<number, string>|null} seq -> state, loaded when a page shows a Snapshot entry */
  let snapshotStates = null;
  let alive = true;

  const tbody = el('tbody');
  const rangeLabel = el('span.muted');
  const goInput = el('input.input.input-narrow#log-goto', {type: 'number', placeholder: 'seq',
                                                          inputmode: 'numeric'});
  const pager = el('div.toolbar', {},
                   button('Oldest', () => show(ctx.info.first_seq), 'small'),
                   button('Older', () => show(from - PAGE_SIZE), 'small'),
                   button('Newer', () => show(from + PAGE_SIZE), 'small'),
                   button('Newest', () => show(null), 'small'),
                   el('form.inline-form', {
                     onsubmit(/** @type {Event} */ event) {
                       event.preventDefault();
                       if (goInput.value !== '') show(Number(goInput.value));
                     },
                   }, el('label', {for: 'log-goto'}, 'Go to seq'), goInput,
                   el('button.btn.btn-small', {type: 'submit'}, 'Go')),
                   rangeLabel);
  body.append(el('div.card', {},
                 pager,
                 el('div.table-wrap', {}, el('table.table.table-log#log-table', {},
                    el('thead', {}, el('tr', {},
                       el('th.num', 'Seq'), el('th', 'Type'), el('th', 'Segment / num'),
                       el('th', 'Created'), el('th.num', 'Size'), el('th', 'Stored'),
                       el('th', 'Metadata'), el('th', 'Content'), el('th', {'aria-label': 'Actions'}))),
                    tbody))));

  async function states() {
    if (!snapshotStates) {
      const [list, dead] = await Promise.all([get(sheetPath(id, '/snapshots')),
                                              deadLetteredSnapshots()]);
      snapshotStates = new Map(list.snapshots.map((/** @type {any} */ s) => [
        s.seq, s.state !== 'completed' && dead.has(`${id}/${s.segment}/${s.num}`)
          ? 'dead-lettered' : s.state]));
    }
    return snapshotStates;
  }

  /**
   * @param {any} entry
   * @param {string|null} snapshotState
   */
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
    if (snapshotState) typeCell.append(' ', badge(snapshotState, STATE_KINDS[snapshotState] || ''));
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

  /** @param {number|null} start */
  async function show(start) {
    snapshotStates = null;  // states change without new entries (a build completing)
    followHead = start === null;
    const head = ctx.nextSeq;
    from = followHead ? Math.max(ctx.info.first_seq, head - PAGE_SIZE)
                      : Math.min(Math.max(ctx.info.first_seq, start ?? 0), Math.max(ctx.info.first_seq, head - 1));
    try {
      const page = await get(sheetPath(id, '/entries') + query({from, limit: PAGE_SIZE}));
      if (!alive) return;
      const entries = page.entries.slice().reverse();  // newest first
      const known = entries.some((/** @type {any} */ e) => e.type === 'Snapshot') ? await states() : new Map();
      clear(tbody, entries.map((/** @type {any} */ e) => row(e, e.type === 'Snapshot' ? known.get(e.seq) || 'queued' : null)));
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
