// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Pipeline: the side-effect path of architecture.md at a glance — live charts of
// appends/s, queue depth and change-feed lag (from /metrics), the queues with their
// messages (peeked, never received), dead letters and redrive, sending and purging
// (when the server's flags allow), the change feed per shard, pending snapshots (a
// dead-lettered one says so), failed jobs with replay, verify with its findings, and
// reprocess.
import {get, post, query} from '../api.js';
import {Sparkline} from '../charts.js';
import {parseMetrics, sumMetric} from '../metrics.js';
import {snapshotJobKey} from '../snapshot_jobs.js';
import {badge, busy, button, clear, confirmDialog, el, formatNumber, formatTime, preview, toast}
  from '../ui.js';

const REFRESH_MS = 2000;

/**
 * @param {string} id
 * @param {string[]} headers ('#' first: a number column)
 * @param {HTMLElement[]} rows
 * @param {string} empty
 */
function table(id, headers, rows, empty) {
  if (rows.length === 0) return el('p.muted.empty', empty);
  return el('div.table-wrap', {}, el(`table.table#${id}`, {},
            el('thead', {}, el('tr', {}, headers.map((h) =>
              el(h.startsWith('#') ? 'th.num' : 'th', {scope: 'col'}, h.replace(/^#/, ''))))),
            el('tbody', {}, rows)));
}

// Replaces `box`'s content with build() only when `data` changed since the last call:
// the tables refresh every few seconds, and rebuilding unchanged ones would move the
// buttons under the user's pointer.
/**
 * @param {HTMLElement} box
 * @param {any} data
 * @param {() => any} build
 */
function renderIfChanged(box, data, build) {
  const key = JSON.stringify(data);
  if (box.dataset.shown === key) return;
  box.dataset.shown = key;
  clear(box, build());
}

/**
 * @param {string} title
 * @param {...any} children
 */
function section(title, ...children) {
  return el('section.card', {}, el('div.card-head', {}, el('h2', title)), ...children);
}

/** @param {number} unixSeconds */
function isoDate(unixSeconds) {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * A sheet as a link to its page, with its name once known.
 * @param {string} id
 * @param {Map<string, string>} names
 * @param {string} [tab]
 */
function sheetLink(id, names, tab = '/log') {
  const name = names.get(id);
  return el('a.sheet-link', {href: `/console/sheets/${id}${tab}`, title: id},
            name || el('code.id', id));
}

/** @param {HTMLElement} main */
export function renderPipeline(main) {
  let alive = true;
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let timer;
  const charts = {
    appends: new Sparkline('Appends / s', {color: '#2563eb'}),
    depth: new Sparkline('Queue depth', {color: '#d97706'}),
    lag: new Sparkline('Change-feed lag (records)', {color: '#7c3aed'}),
  };
  /** @type {{value: number, at: number}|null} */
  let lastAppends = null;
  /** @type {{faults: boolean, reset: boolean}} */
  let controls = {faults: false, reset: false};
  /** @type {Map<string, string>} sheet id -> name */
  const names = new Map();
  /** @type {string|null} the queue whose messages are shown */
  let shownQueue = null;

  const queuesBox = el('div', {}, el('p.muted', 'Loading…'));
  const messagesBox = el('div.queue-messages#queue-messages');
  const feedBox = el('div', {}, el('p.muted', 'Loading…'));
  const pendingBox = el('div', {}, el('p.muted', 'Loading…'));
  const jobsBox = el('div', {}, el('p.muted', 'Loading…'));
  const verifyBox = el('div', {}, el('p.muted', 'Checks every invariant of the architecture: ' +
                                     'seq and num without gaps, segment boundaries, snapshots ' +
                                     'against a replay of the log, blobs present and untagged.'));
  const reprocessBox = el('div');
  const updated = el('span.muted.small');

  const replayButton = button('Replay failed jobs', () => busy(replayButton, replay), 'small');
  const verifyButton = button('Run verify', () => busy(verifyButton, verify), 'primary');
  const sinceInput = el('input.input#reprocess-since', {type: 'text', required: true,
                                                        placeholder: '2026-01-01T00:00:00Z'});
  const sheetInput = el('input.input#reprocess-sheet', {type: 'text',
                                                        placeholder: 'every sheet'});
  const reprocessButton = el('button.btn', {type: 'submit'}, 'Reprocess');

  main.append(el('section.page.page-pipeline', {},
    el('div.page-head', {}, el('h1', 'Pipeline'), updated),
    el('div.charts', {}, charts.appends.node, charts.depth.node, charts.lag.node),
    section('Queues', queuesBox, messagesBox),
    el('div.two-columns', {},
       section('Change feed', feedBox),
       section('Pending snapshots', pendingBox)),
    el('div.two-columns', {},
       el('section.card', {}, el('div.card-head', {}, el('h2', 'Failed jobs'), replayButton),
          jobsBox),
       el('section.card', {}, el('div.card-head', {}, el('h2', 'Verify'), verifyButton), verifyBox)),
    el('div', {},
       section('Reprocess',
               el('p.muted', 'Seed 000’s manual fallback: re-enqueues the Snapshot entries ' +
                             'without a root since a time and untags referenced blobs. Safe to ' +
                             'run twice.'),
               el('form.form-row', {
                 onsubmit(/** @type {Event} */ event) {
                   event.preventDefault();
                   busy(reprocessButton, reprocess);
                 },
               },
               el('div.field', {}, el('label', {for: 'reprocess-since'}, 'Since (ISO-8601 UTC)'), sinceInput),
               el('div.field', {}, el('label', {for: 'reprocess-sheet'}, 'Sheet id (optional)'), sheetInput),
               el('div.field.field-button', {}, reprocessButton)),
               reprocessBox))));

  // Names of the sheets the tables mention, read once each.
  /** @param {string[]} ids */
  async function learnNames(ids) {
    const unknown = [...new Set(ids)].filter((id) => !names.has(id)).slice(0, 20);
    await Promise.all(unknown.map(async (id) => {
      try {
        const sheet = await get(`/v1/sheets/${encodeURIComponent(id)}`);
        names.set(id, sheet.name || '(unnamed)');
      } catch {
        names.set(id, '');  // deleted: the id is shown
      }
    }));
  }

  async function refreshMetrics() {
    const response = await fetch('/metrics');
    const samples = parseMetrics(await response.text());
    const appends = sumMetric(samples, 'sheetlog_appends');
    const now = performance.now();
    if (lastAppends) {
      const seconds = (now - lastAppends.at) / 1000;
      charts.appends.push(Math.max(0, (appends - lastAppends.value) / seconds));
    }
    lastAppends = {value: appends, at: now};
    charts.depth.push(sumMetric(samples, 'sheetlog_queue_visible') +
                      sumMetric(samples, 'sheetlog_queue_in_flight'));
    charts.lag.push(sumMetric(samples, 'sheetlog_feed_lag_records'));
  }

  /**
   * Peeks at a queue's messages (its dead-letter queue's with `dead`): read without
   * being received. With the flags, a form to send one and a purge button.
   * @param {string} queue
   * @param {boolean} dead
   */
  async function showMessages(queue, dead) {
    shownQueue = queue;
    clear(messagesBox, el('p.muted', `Loading messages of ${queue}…`));
    try {
      const result = dead
        ? await get(`/v1/admin/queues/${encodeURIComponent(queue)}/dead-letters`)
        : await get(`/v1/admin/queues/${encodeURIComponent(queue)}/messages?limit=100`);
      const shown = dead ? result.dead_letter_queue : queue;
      const rows = result.messages.map((/** @type {any} */ m) => {
        const details = el('tr.details-row', {hidden: true},
                           el('td', {colspan: 5}, el('pre.json', prettyBody(m.body))));
        return [el('tr', {dataset: {message: m.id}},
                   el('td', {}, el('code.id', m.id)),
                   el('td.num', formatNumber(m.receive_count)),
                   el('td.error-text', preview(m.last_error || '', 160)),
                   el('td', {}, el('code', preview(m.body, 80))),
                   el('td.actions', {},
                      button('Body', () => { details.hidden = !details.hidden; }, 'small.btn-ghost',
                             {'aria-label': `Show the body of ${m.id}`}),
                      dead ? button('Redrive', (/** @type {MouseEvent} */ event) => busy(
                        /** @type {any} */ (event.currentTarget), async () => {
                          if (await redriveOne(queue, m.id)) showMessages(queue, true);
                        }), 'small', {'aria-label': `Redrive message ${m.id}`}) : null)), details];
      });
      const sendBody = el('textarea.input.textarea#send-body', {rows: 3, placeholder: '{"sheet": "…"}'});
      const sendButton = el('button.btn.btn-small', {type: 'submit'}, 'Send');
      clear(messagesBox,
            el('div.card-head', {},
               el('h3', dead ? `Dead letters of ${queue} (${shown})` : `Messages in ${queue}`),
               el('div.button-group', {},
                  button('Refresh', () => showMessages(queue, dead), 'small'),
                  !dead && controls.reset
                    ? button('Purge', () => purge(queue), 'small.btn-ghost-danger',
                             {'aria-label': `Purge ${queue}`})
                    : null,
                  button('Close', () => { shownQueue = null; clear(messagesBox); }, 'small.btn-ghost'))),
            el('p.muted.small', dead ? 'Messages the worker gave up on, with their last error.'
              : 'Peeked, not received: their visibility and receive counts do not change.'),
            table(dead ? 'dead-letter-table' : 'messages-table',
                  ['Message', '#Receives', 'Last error', 'Body', ''], rows.flat(),
                  dead ? 'No dead letters.' : 'The queue is empty.'),
            !dead && controls.faults
              ? el('form.send-form', {
                onsubmit(/** @type {Event} */ event) {
                  event.preventDefault();
                  busy(sendButton, async () => {
                    const sent = await post(`/v1/admin/queues/${encodeURIComponent(queue)}/messages`,
                                            {body: sendBody.value});
                    toast(`Sent message ${sent.id} to ${queue}`, 'success');
                    sendBody.value = '';
                    await showMessages(queue, false);
                  });
                },
              }, el('label', {for: 'send-body'}, `Send a message to ${queue} (test control)`),
              sendBody, sendButton)
              : null);
    } catch (error) {
      clear(messagesBox, el('div.notice.notice-error', error.message));
    }
  }

  /** @param {string} body */
  function prettyBody(body) {
    try {
      return JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      return body;
    }
  }

  /** @param {string} queue */
  async function purge(queue) {
    const ok = await confirmDialog(`Purge ${queue}?`,
                                   `Every message waiting in ${queue} is deleted, unprocessed. ` +
                                   'Snapshot entries whose jobs are purged wait for reprocess.',
                                   'Purge');
    if (!ok) return;
    try {
      const result = await post(`/v1/admin/queues/${encodeURIComponent(queue)}/purge`, {});
      toast(`Purged ${result.purged} message${result.purged === 1 ? '' : 's'} from ${queue}`, 'success');
      await Promise.all([refreshState(), showMessages(queue, false)]);
    } catch (error) {
      toast(error.message, 'error');
    }
  }

  /**
   * @param {string} queue
   * @param {string} [messageId]
   */
  async function redrive(queue, messageId) {
    const result = await post(`/v1/admin/queues/${encodeURIComponent(queue)}/redrive`,
                              messageId ? {message_id: messageId} : {});
    toast(`Redrove ${result.moved} message${result.moved === 1 ? '' : 's'} from ${result.dead_letter_queue}`,
          'success');
    await refreshState();
  }

  /**
   * One dead letter back to its queue, after a confirmation (as "Redrive all"). True when
   * it was redriven.
   * @param {string} queue
   * @param {string} messageId
   */
  async function redriveOne(queue, messageId) {
    const ok = await confirmDialog(`Redrive this message of ${queue}?`,
                                   `Message ${messageId} goes back to ${queue} and runs again. ` +
                                   'Fix what failed it first, or it fails again.',
                                   'Redrive', 'primary');
    if (!ok) return false;
    await redrive(queue, messageId);
    return true;
  }

  /**
   * @param {string} queue
   * @param {number} depth
   */
  async function redriveAll(queue, depth) {
    const ok = await confirmDialog(`Redrive ${queue}?`,
                                   `All ${formatNumber(depth)} dead letters go back to ${queue} ` +
                                   'and run again. Fix what failed them first, or they fail again.',
                                   'Redrive all', 'primary');
    if (!ok) return;
    try {
      await redrive(queue);
      if (shownQueue === queue) showMessages(queue, true);
    } catch (error) {
      toast(error.message, 'error');
    }
  }

  async function refreshState() {
    const [queues, feed, pending, jobs] = await Promise.all([
      get('/v1/admin/queues'),
      get('/v1/admin/feed'),
      get('/v1/admin/pending-snapshots'),
      get(`/v1/admin/jobs${query({status: 'failed', since: '1970-01-01'})}`),
    ]);
    // A pending snapshot whose job is dead-lettered is not building, whatever its row.
    /** @type {Set<string>} */
    const dead = new Set();
    const snapshots = queues.queues.find((/** @type {any} */ q) => q.name === 'snapshots');
    if (snapshots && snapshots.dead_letter_depth > 0) {
      const letters = await get('/v1/admin/queues/snapshots/dead-letters?limit=1000');
      for (const m of letters.messages) {
        const key = snapshotJobKey(m.body);
        if (key) dead.add(key);
      }
    }
    await learnNames(pending.pending_snapshots.map((/** @type {any} */ p) => p.sheet));
    if (!alive) return;
    renderIfChanged(queuesBox, [queues, controls], () => table('queues-table',
      ['Queue', '#Visible', '#In flight', '#Delayed', '#Oldest', '#Dead letters', ''],
      queues.queues.map((/** @type {any} */ q) => el('tr', {dataset: {queue: q.name}},
        el('td', {}, el('strong', q.name),
           q.dead_letter_queue ? el('div.muted.small', `DLQ ${q.dead_letter_queue}`) : null),
        el('td.num', formatNumber(q.visible)),
        el('td.num', formatNumber(q.in_flight)),
        el('td.num', formatNumber(q.delayed)),
        el('td.num', q.oldest_age_s ? `${formatNumber(q.oldest_age_s)} s` : '—'),
        el('td.num.dead-letter-depth', q.dead_letter_depth === null ? '—'
          : q.dead_letter_depth > 0 ? badge(formatNumber(q.dead_letter_depth), 'danger') : '0'),
        el('td.actions', {},
           button('Messages', () => showMessages(q.name, false), 'small.btn-ghost',
                  {'aria-label': `Show messages of ${q.name}`}),
           q.dead_letter_depth > 0
             ? [button('Dead letters', () => showMessages(q.name, true), 'small.btn-ghost',
                       {'aria-label': `Show dead letters of ${q.name}`}),
                button('Redrive all', () => redriveAll(q.name, q.dead_letter_depth), 'small',
                       {'aria-label': `Redrive ${q.name}`})]
             : null))),
      'No queues.'));
    renderIfChanged(feedBox, feed, () => [el('p.muted.small', `Stream “${feed.stream}”`), table('feed-table',
      ['Shard', '#Latest', '#Retained', 'Consumer', '#Checkpoint', '#Lag', '#Age'],
      feed.shards.flatMap((/** @type {any} */ s) => (s.consumers.length ? s.consumers : [null]).map((/** @type {any} */ c, /** @type {number} */ i) =>
        el('tr', {},
           el('td', i === 0 ? String(s.shard) : ''),
           el('td.num', i === 0 ? formatNumber(s.latest) : ''),
           el('td.num', i === 0 ? formatNumber(s.retained) : ''),
           el('td', c ? c.consumer : '—'),
           el('td.num', c ? formatNumber(c.checkpoint) : '—'),
           el('td.num', {}, c ? (c.lag_records > 0 ? badge(formatNumber(c.lag_records), 'warning') : '0') : '—'),
           el('td.num', c && c.oldest_unprocessed_age_s ? `${c.oldest_unprocessed_age_s} s` : '—')))),
      'No shards yet.')]);
    renderIfChanged(pendingBox, [pending, [...dead], [...names]], () => table('pending-table',
      ['Sheet', 'Segment / entry', 'State', '#Age', 'Checkpoint'],
      pending.pending_snapshots.map((/** @type {any} */ p) => {
        const deadLettered = dead.has(`${p.sheet}/${p.segment}/${p.entry}`);
        return el('tr', {dataset: {sheet: p.sheet}},
                  el('td', {}, sheetLink(p.sheet, names)),
                  el('td', `${p.segment} / ${p.entry}`),
                  el('td', {}, deadLettered ? badge('dead-lettered', 'danger')
                    : p.active ? badge('building', 'info') : badge('waiting', 'warning')),
                  el('td.num', `${formatNumber(p.age_s)} s`),
                  el('td', p.has_checkpoint ? 'yes' : '—'));
      }),
      'Nothing pending: every Snapshot entry is built.'));
    renderIfChanged(jobsBox, jobs, () => table('jobs-table', ['Key', 'Source', 'At', 'Error'],
      jobs.jobs.map((/** @type {any} */ j) => el('tr', {},
        el('td', {}, el('code', preview(j.key, 48))),
        el('td', j.source),
        el('td.muted', formatTime(j.at)),
        el('td.error-text', preview(j.error || '', 160)))),
      'No failed jobs.'));
    replayButton.disabled = jobs.jobs.length === 0;
    replayButton.dataset.since = jobs.jobs.length
      ? isoDate(Math.min(...jobs.jobs.map((/** @type {any} */ j) => j.at))) : '';
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
  }

  async function replay() {
    const since = replayButton.dataset.since || '1970-01-01T00:00:00Z';
    const result = await post('/v1/admin/jobs/replay', {since});
    toast(`Replay: ${result.succeeded} succeeded, ${result.redriven} redriven, ` +
          `${result.failed} failed, ${result.skipped} skipped`, result.failed ? 'warning' : 'success');
    await refreshState();
  }

  async function verify() {
    clear(verifyBox, el('p.muted', 'Verifying…'));
    const report = await post('/v1/admin/verify', {});
    // Pending: findings the pipeline explains by work still queued or in flight (a
    // busy server); they do not make the report fail.
    /** @type {any[]} */
    const pending = report.pending || [];
    await learnNames([...report.violations, ...pending].map((/** @type {any} */ v) => v.sheet)
      .filter(Boolean));
    /**
     * @param {string} id
     * @param {any[]} list
     */
    const findings = (id, list) => table(id, ['Invariant', 'Sheet', 'Where', 'Detail'],
      list.map((/** @type {any} */ v) => el('tr', {},
        el('td', {}, el('code', v.invariant)),
        el('td', {}, v.sheet ? sheetLink(v.sheet, names) : '—'),
        el('td', [v.segment !== null ? `segment ${v.segment}` : '', v.seq !== null ? ` seq ${v.seq}` : '',
                  v.blob ? ` blob ${v.blob}` : ''].join('').trim() || '—'),
        el('td', v.detail))), '');
    clear(verifyBox,
          el('div', {}, report.ok ? badge('OK: no violations', 'success')
            : badge(`${report.violations.length} violations`, 'danger'),
             pending.length ? badge(`${pending.length} pending (not finished yet)`, 'warning') : null),
          el('p.muted.small', `${formatNumber(report.sheets)} sheets, ${formatNumber(report.segments)} ` +
                              `segments, ${formatNumber(report.entries)} entries, ` +
                              `${formatNumber(report.snapshots_compared)} snapshots compared, ` +
                              `${formatNumber(report.blobs_checked)} blobs checked`),
          report.violations.length ? findings('violations-table', report.violations) : null,
          pending.length ? findings('pending-table', pending) : null);
  }

  async function reprocess() {
    /** @type {Record<string, string>} */
    const body = {since: sinceInput.value.trim()};
    if (sheetInput.value.trim()) body.sheet = sheetInput.value.trim();
    const report = await post('/v1/admin/reprocess', body);
    clear(reprocessBox, el('div.notice.notice-success', {},
      `${formatNumber(report.sheets)} sheets, ${formatNumber(report.entries)} entries examined: ` +
      `${formatNumber(report.snapshots_enqueued)} snapshots enqueued, ` +
      `${formatNumber(report.blobs_untagged)} blobs untagged.`));
  }

  async function tick() {
    if (!alive) return;
    if (document.visibilityState === 'visible') {
      try {
        await Promise.all([refreshMetrics(), refreshState()]);
      } catch (error) {
        updated.textContent = `Refresh failed: ${error.message}`;
      }
    }
    if (alive) timer = setTimeout(tick, REFRESH_MS);
  }

  get('/v1/admin/controls').then((c) => {
    controls = {faults: c.faults, reset: c.reset};
    if (!sinceInput.value) sinceInput.value = isoDate(c.clock.now - 86400);
  }).catch(() => {});
  tick();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
