// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The Controls page's Health panel: GET /v1/health rendered (issue 35). Each dependency
// (the table store, the blob store) with its kind, state and the latency of its probe,
// and this node's view of the cluster: its id, the nodes alive with their leases, who
// holds each change-feed shard and cluster job. The server bounds the probes (a store
// that does not answer is reported unavailable after the probe timeout), so a refresh
// never hangs; /readyz is not this (it stays 200 while the node serves).
import {get} from '../api.js';
import {badge, busy, button, clear, el, keyValues} from '../ui.js';
import {formatDuration} from './functions.js';

/**
 * A holder's owner id, short, marked when it is this node or when its lease lapsed.
 * @param {string} holder
 * @param {boolean} live
 * @param {string|null} self
 */
function holderCell(holder, live, self) {
  return el('td', {}, el('code', {title: holder}, holder.slice(0, 8)), ' ',
            holder === self ? badge('this node', 'info') : null,
            live ? null : badge('lapsed: free to take', 'warning'));
}

/**
 * @param {string} id
 * @param {string[]} heads
 * @param {HTMLElement[]} rows
 * @param {string} empty what an empty table says
 */
function smallTable(id, heads, rows, empty) {
  if (!rows.length) return el('p.muted', empty);
  return el('div.table-wrap', {}, el(`table.table#${id}`, {},
    el('thead', {}, el('tr', {}, heads.map((h) => el('th', h)))), el('tbody', {}, rows)));
}

/**
 * The report, rendered.
 * @param {any} report GET /v1/health
 */
export function healthView(report) {
  const cluster = report.cluster ?? {};
  const self = cluster.node_id ?? null;
  const stateBadge = (/** @type {string} */ state) =>
    badge(state, state === 'ok' ? 'success' : 'danger');
  const dependencies = (report.dependencies ?? []).map((/** @type {any} */ d) =>
    el('tr', {dataset: {dependency: d.name, state: d.state}},
       el('td', {}, d.name.replace('_', ' ')), el('td', d.kind), el('td', {}, stateBadge(d.state)),
       el('td.num', formatDuration(d.latency_micros / 1000)),
       el('td', {}, d.error ? el('span.small', d.error) : el('code.small', d.location ?? ''))));
  const nodes = (cluster.nodes ?? []).map((/** @type {any} */ n) =>
    el('tr', {dataset: {node: n.id}},
       el('td', {}, el('code', {title: n.id}, n.id.slice(0, 8)), ' ',
          n.self ? badge('this node', 'info') : null),
       el('td', {}, n.node || '—'),
       el('td.num', `${n.lease_expires_in_seconds.toFixed(1)} s`)));
  const shards = (cluster.shard_claims ?? []).map((/** @type {any} */ c) =>
    el('tr', {dataset: {claim: c.claim}}, el('td', c.mapping), el('td.num', String(c.shard)),
       holderCell(c.holder, c.holder_live, self)));
  const jobs = (cluster.job_claims ?? []).map((/** @type {any} */ c) =>
    el('tr', {dataset: {claim: c.claim}}, el('td', c.job), holderCell(c.holder, c.holder_live, self)));
  const skew = cluster.clock_skew_seconds;
  return [
    el('p', {}, report.status === 'ok' ? badge('ok', 'success') : badge('degraded', 'danger'), ' ',
       el('span.muted.small', `Each probe waits at most ${report.probe_timeout_ms} ms.`)),
    smallTable('health-dependencies', ['Dependency', 'Kind', 'State', 'Latency', 'Location or error'],
               dependencies, 'No dependency reported.'),
    el('h3', 'Cluster'),
    cluster.state === 'ok' ? null
      : el('div.notice.notice-error', `The cluster could not be read: ${cluster.error ?? 'unknown error'}`),
    keyValues([
      ['This node', self ? el('code', self) : 'no lease (workers off)'],
      ['Name', cluster.node || '—'],
      ['Lease clock', cluster.lease_clock === 'database'
        ? 'the database’s (leases are judged on it, whatever this node’s clock says)'
        : 'this node’s (manual clock, or SQLite: the database’s clock is the node’s)'],
      ['Clock skew', typeof skew === 'number'
        ? el('span', {}, `${skew >= 0 ? '+' : ''}${skew.toFixed(3)} s `,
             Math.abs(skew) > 1 ? badge('beyond 1 s: check NTP', 'warning') : null)
        : '—'],
    ]),
    el('h3', 'Nodes alive'),
    smallTable('health-nodes', ['Node', 'Name', 'Lease expires in'], nodes, 'No live lease.'),
    el('h3', 'Change-feed shards'),
    smallTable('health-shards', ['Mapping', 'Shard', 'Holder'], shards, 'No shard claimed yet.'),
    el('h3', 'Cluster jobs'),
    smallTable('health-jobs', ['Job', 'Holder'], jobs, 'No job claimed yet.'),
  ];
}

/**
 * Fills `box` with the report and a refresh button in `head`.
 * @param {HTMLElement} head the card's head (the button goes there)
 * @param {HTMLElement} box
 * @returns {() => void} stops updating the panel (the page was left)
 */
export function renderHealthPanel(head, box) {
  let alive = true;
  async function load() {
    try {
      const report = await get('/v1/health');
      if (alive) clear(box, healthView(report));
    } catch (error) {
      if (alive) clear(box, el('div.notice.notice-error', error.message));
    }
  }
  const refresh = button('Refresh', () => busy(refresh, load), 'small', {id: 'health-refresh'});
  head.append(refresh);
  clear(box, el('p.muted', 'Probing…'));
  load();
  return () => { alive = false; };
}
