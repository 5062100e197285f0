// Pipeline: the side-effect path of architecture.md at a glance — live charts of
// appends/s, queue depth and change-feed lag (from /metrics), the queues with their
// dead letters and a redrive button, the change feed per shard, pending snapshots,
// failed jobs with replay, verify with its findings, and reprocess.
import {get, post, query} from '../api.js';
import {parseMetrics, Sparkline, sumMetric} from '../charts.js';
import {badge, busy, button, clear, el, formatNumber, formatTime, preview, toast}
    from '../ui.js';

const REFRESH_MS = 2000;

function table(id, headers, rows, empty) {
  if (rows.length === 0) return el('p.muted.empty', empty);
  return el(`table.table#${id}`, {},
            el('thead', {}, el('tr', {}, headers.map((h) =>
                el(h.startsWith('#') ? 'th.num' : 'th', h.replace(/^#/, ''))))),
            el('tbody', {}, rows));
}

// Replaces `box`'s content with build() only when `data` changed since the last call:
// the tables refresh every few seconds, and rebuilding unchanged ones would move the
// buttons under the user's pointer.
function renderIfChanged(box, data, build) {
  const key = JSON.stringify(data);
  if (box.dataset.shown === key) return;
  box.dataset.shown = key;
  clear(box, build());
}

function section(title, ...children) {
  return el('section.card', {}, el('div.card-head', {}, el('h2', title)), ...children);
}

function isoDate(unixSeconds) {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
}

export function renderPipeline(main) {
  let alive = true;
  let timer = null;
  const charts = {
    appends: new Sparkline('Appends / s', {color: '#2563eb'}),
    depth: new Sparkline('Queue depth', {color: '#d97706'}),
    lag: new Sparkline('Change-feed lag (records)', {color: '#7c3aed'}),
  };
  let lastAppends = null;

  const queuesBox = el('div', {}, el('p.muted', 'Loading…'));
  const lettersBox = el('div.dead-letters');
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
  const sinceInput = el('input.input', {type: 'text', 'aria-label': 'Reprocess since',
                                        placeholder: '2026-01-01T00:00:00Z', required: true});
  const sheetInput = el('input.input', {type: 'text', 'aria-label': 'Reprocess sheet',
                                        placeholder: 'sheet id (optional: every sheet)'});
  const reprocessButton = el('button.btn', {type: 'submit'}, 'Reprocess');

  main.append(el('section.page.page-pipeline', {},
    el('div.page-head', {}, el('h1', 'Pipeline'), updated),
    el('div.charts', {}, charts.appends.node, charts.depth.node, charts.lag.node),
    section('Queues', queuesBox, lettersBox),
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
               el('form.toolbar', {
                 onsubmit(event) {
                   event.preventDefault();
                   busy(reprocessButton, reprocess);
                 },
               }, sinceInput, sheetInput, reprocessButton),
               reprocessBox))));

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

  async function showDeadLetters(queue) {
    clear(lettersBox, el('p.muted', `Loading dead letters of ${queue}…`));
    try {
      const result = await get(`/v1/admin/queues/${encodeURIComponent(queue)}/dead-letters`);
      clear(lettersBox,
            el('h3', `Dead letters of ${queue} (${result.dead_letter_queue})`),
            table('dead-letter-table', ['Message', '#Receives', 'Last error', 'Body', ''],
                  result.messages.map((m) => el('tr', {},
                      el('td', {}, el('code.id', m.id)),
                      el('td.num', formatNumber(m.receive_count)),
                      el('td.error-text', preview(m.last_error || '', 160)),
                      el('td', {}, el('code', preview(m.body, 80))),
                      el('td.actions', {}, button('Redrive', (event) => busy(event.target, async () => {
                        await redrive(queue, m.id);
                        showDeadLetters(queue);
                      }), 'small')))),
                  'No dead letters.'));
    } catch (error) {
      clear(lettersBox, el('div.notice.notice-error', error.message));
    }
  }

  async function redrive(queue, messageId) {
    const result = await post(`/v1/admin/queues/${encodeURIComponent(queue)}/redrive`,
                              messageId ? {message_id: messageId} : {});
    toast(`Redrove ${result.moved} message${result.moved === 1 ? '' : 's'} from ${result.dead_letter_queue}`,
          'success');
    await refreshState();
  }

  async function refreshState() {
    const [queues, feed, pending, jobs] = await Promise.all([
      get('/v1/admin/queues'),
      get('/v1/admin/feed'),
      get('/v1/admin/pending-snapshots'),
      get(`/v1/admin/jobs${query({status: 'failed', since: '1970-01-01'})}`),
    ]);
    if (!alive) return;
    renderIfChanged(queuesBox, queues, () => table('queues-table',
        ['Queue', '#Visible', '#In flight', '#Delayed', '#Oldest', '#Dead letters', ''],
        queues.queues.map((q) => el('tr', {dataset: {queue: q.name}},
            el('td', {}, el('strong', q.name),
               q.dead_letter_queue ? el('div.muted.small', `DLQ ${q.dead_letter_queue}`) : null),
            el('td.num', formatNumber(q.visible)),
            el('td.num', formatNumber(q.in_flight)),
            el('td.num', formatNumber(q.delayed)),
            el('td.num', q.oldest_age_s ? `${formatNumber(q.oldest_age_s)} s` : '—'),
            el('td.num.dead-letter-depth', q.dead_letter_depth === null ? '—'
                : q.dead_letter_depth > 0 ? badge(formatNumber(q.dead_letter_depth), 'danger') : '0'),
            el('td.actions', {},
               q.dead_letter_depth > 0
                   ? [button('Show', () => showDeadLetters(q.name), 'small.btn-ghost',
                             {'aria-label': `Show dead letters of ${q.name}`}),
                      button('Redrive all', (event) => busy(event.target, () => redrive(q.name)),
                             'small', {'aria-label': `Redrive ${q.name}`})]
                   : null))),
        'No queues.'));
    renderIfChanged(feedBox, feed, () => [el('p.muted.small', `Stream “${feed.stream}”`), table('feed-table',
        ['Shard', '#Latest', '#Retained', 'Consumer', '#Checkpoint', '#Lag', '#Age'],
        feed.shards.flatMap((s) => (s.consumers.length ? s.consumers : [null]).map((c, i) =>
            el('tr', {},
               el('td', i === 0 ? String(s.shard) : ''),
               el('td.num', i === 0 ? formatNumber(s.latest) : ''),
               el('td.num', i === 0 ? formatNumber(s.retained) : ''),
               el('td', c ? c.consumer : '—'),
               el('td.num', c ? formatNumber(c.checkpoint) : '—'),
               el('td.num', {}, c ? (c.lag_records > 0 ? badge(formatNumber(c.lag_records), 'warning') : '0') : '—'),
               el('td.num', c && c.oldest_unprocessed_age_s ? `${c.oldest_unprocessed_age_s} s` : '—')))),
        'No shards yet.')]);
    renderIfChanged(pendingBox, pending, () => table('pending-table',
        ['Sheet', 'Segment / entry', 'State', '#Age', 'Checkpoint'],
        pending.pending_snapshots.map((p) => el('tr', {},
            el('td', {}, el('a', {href: `/console/sheets/${p.sheet}/log`}, el('code.id', p.sheet.slice(0, 8)))),
            el('td', `${p.segment} / ${p.entry}`),
            el('td', {}, p.active ? badge('building', 'info') : badge('waiting', 'warning')),
            el('td.num', `${formatNumber(p.age_s)} s`),
            el('td', p.has_checkpoint ? 'yes' : '—'))),
        'Nothing pending: every Snapshot entry is built.'));
    renderIfChanged(jobsBox, jobs, () => table('jobs-table', ['Key', 'Source', 'At', 'Error'],
        jobs.jobs.map((j) => el('tr', {},
            el('td', {}, el('code', preview(j.key, 48))),
            el('td', j.source),
            el('td.muted', formatTime(j.at)),
            el('td.error-text', preview(j.error || '', 160)))),
        'No failed jobs.'));
    replayButton.disabled = jobs.jobs.length === 0;
    replayButton.dataset.since = jobs.jobs.length
        ? isoDate(Math.min(...jobs.jobs.map((j) => j.at))) : '';
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
    clear(verifyBox,
          el('div', {}, report.ok ? badge('OK: no violations', 'success')
                                  : badge(`${report.violations.length} violations`, 'danger')),
          el('p.muted.small', `${formatNumber(report.sheets)} sheets, ${formatNumber(report.segments)} ` +
                              `segments, ${formatNumber(report.entries)} entries, ` +
                              `${formatNumber(report.snapshots_compared)} snapshots compared, ` +
                              `${formatNumber(report.blobs_checked)} blobs checked`),
          report.violations.length ? table('violations-table', ['Invariant', 'Sheet', 'Where', 'Detail'],
              report.violations.map((v) => el('tr', {},
                  el('td', {}, el('code', v.invariant)),
                  el('td', {}, v.sheet ? el('a', {href: `/console/sheets/${v.sheet}/log`}, v.sheet.slice(0, 8)) : '—'),
                  el('td', [v.segment !== null ? `segment ${v.segment}` : '', v.seq !== null ? ` seq ${v.seq}` : '',
                            v.blob ? ` blob ${v.blob}` : ''].join('').trim() || '—'),
                  el('td', v.detail))), '') : null);
  }

  async function reprocess() {
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

  get('/v1/admin/clock').then((clock) => {
    if (!sinceInput.value) sinceInput.value = isoDate(clock.now - 86400);
  }).catch(() => {});
  tick();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}
