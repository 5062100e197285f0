// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Functions: the log of every invocation of the runtime's workers (LocalStack's
// function logs): the stream mappings (snapshot requests, upload untags) and the queue
// mapping (the snapshot worker), each with its work key, outcome, duration and error,
// newest first (GET /v1/admin/invocations, from seed 002's execution history). A
// queue worker that disposes of its message itself (the snapshot worker completing a
// build, or re-sending the job delayed) is recorded "deferred", "handled by the handler".
import {get, query} from '../api.js';
import {badge, busy, button, clear, el, preview} from '../ui.js';

/** @type {Record<string, string>} */
const STATUS_KINDS = {succeeded: 'success', failed: 'danger', deferred: 'info', started: 'warning'};

/** @param {number} micros */
export function formatMicros(micros) {
  return new Date(micros / 1000).toISOString().replace('T', ' ').replace('Z', '').slice(0, 23);
}

/** @param {number|null} ms */
export function formatDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1) return `${Math.round(ms * 1000)} µs`;
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

/** @param {HTMLElement} main */
export function renderFunctions(main) {
  let alive = true;
  /** @type {string|null} */
  let next = null;
  const tbody = el('tbody');
  const status = el('p.muted', 'Loading…');
  const sourceSelect = el('select.input#invocation-source', {},
                          el('option', {value: ''}, 'every function'));
  const statusSelect = el('select.input#invocation-status', {},
                          el('option', {value: ''}, 'any outcome'),
                          ['succeeded', 'failed', 'deferred', 'started'].map((s) =>
                            el('option', {value: s}, s)));
  const older = button('Older', () => busy(older, () => load(false)), '', {hidden: true});
  const refresh = button('Refresh', () => busy(refresh, () => load(true)), 'small');

  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Functions'),
                    el('p.muted.small', 'Every invocation of the runtime’s workers, newest first.')),
                 el('div.card', {},
                    el('form.form-row', {
                      onsubmit(/** @type {Event} */ event) {
                        event.preventDefault();
                        load(true);
                      },
                      onchange: () => load(true),
                    },
                    el('div.field', {}, el('label', {for: 'invocation-source'}, 'Function'), sourceSelect),
                    el('div.field', {}, el('label', {for: 'invocation-status'}, 'Outcome'), statusSelect),
                    el('div.field.field-button', {}, refresh)),
                    el('div.table-wrap', {}, el('table.table#invocations-table', {},
                       el('thead', {}, el('tr', {},
                          ['At (UTC)', 'Function', 'Outcome', 'Duration', 'Work', 'Error'].map((h) =>
                            el(h === 'Duration' ? 'th.num' : 'th', {scope: 'col'}, h)),
                          el('th', {'aria-label': 'Actions'}))),
                       tbody)),
                    status, older)));

  /** @param {any} inv */
  function row(inv) {
    const details = el('tr.details-row', {hidden: true},
                       el('td', {colspan: 7}, el('pre.json', JSON.stringify(inv, null, 2))));
    const state = inv.status === 'started' ? 'running or abandoned' : inv.status;
    return [el('tr', {dataset: {status: inv.status, source: inv.source}},
               el('td.muted', formatMicros(inv.at_micros)),
               el('td', {}, el('code', inv.source)),
               el('td', {}, badge(state, STATUS_KINDS[inv.status] || '')),
               el('td.num', formatDuration(inv.duration_ms)),
               el('td', {}, el('code', {title: inv.key}, preview(inv.detail || inv.key, 100))),
               el(inv.status === 'failed' ? 'td.error-text' : 'td.muted', preview(inv.error || '', 160)),
               el('td.actions', {}, button('Details', () => { details.hidden = !details.hidden; },
                                           'small.btn-ghost'))),
            details];
  }

  /** @param {boolean} fresh */
  async function load(fresh) {
    try {
      const page = await get(`/v1/admin/invocations${query({
        source: sourceSelect.value, status: statusSelect.value, limit: 100,
        before: fresh ? null : next,
      })}`);
      if (!alive) return;
      if (fresh) clear(tbody);
      tbody.append(...page.invocations.flatMap(row));
      next = page.next;
      older.hidden = !next;
      status.hidden = tbody.children.length > 0;
      status.textContent = 'No invocations yet.';
      const known = new Set([...sourceSelect.options].map((o) => o.value));
      for (const inv of page.invocations) {
        if (!known.has(inv.source)) {
          known.add(inv.source);
          sourceSelect.append(el('option', {value: inv.source}, inv.source));
        }
      }
    } catch (error) {
      status.hidden = false;
      status.textContent = `Could not read the log: ${error.message}`;
    }
  }

  load(true);
  return () => { alive = false; };
}
