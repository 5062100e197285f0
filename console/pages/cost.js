// SPDX-License-Identifier: Apache-2.0
// Cost: what the sheet used, priced at seed 001's on-demand AWS prices
// (GET /v1/sheets/{id}/cost; src/ops/cost.h says what each number counts).
import {get, sheetPath} from '../api.js';
import {button, clear, el, formatBytes, formatNumber, formatUsd} from '../ui.js';

export function renderCost(body, ctx) {
  const content = el('div.cost', {}, el('p.muted', 'Loading…'));
  body.append(el('section.card', {},
                 el('div.card-head', {}, el('h2', 'Estimated AWS cost'),
                    button('Refresh', () => load(), 'small')),
                 content));

  function table(title, rows) {
    return el('div.cost-block', {},
              el('h3', title),
              el('table.table.table-compact', {},
                 el('tbody', {}, rows.map(([label, value]) =>
                     el('tr', {}, el('th', {scope: 'row'}, label), el('td.num', value))))));
  }

  async function load() {
    try {
      const c = await get(sheetPath(ctx.id, '/cost'));
      const usd = c.usd;
      clear(content,
            el('div.cost-totals', {},
               el('div.stat-card', {}, el('span.stat-label', 'Requests so far'),
                  el('span.stat-big#cost-requests', formatUsd(usd.requests_total))),
               el('div.stat-card', {}, el('span.stat-label', 'Storage per month'),
                  el('span.stat-big', formatUsd(usd.storage_per_month)))),
            el('div.cost-grid', {},
               table('DynamoDB', [
                 ['Requests', formatNumber(c.requests)],
                 ['Read units', formatNumber(c.dynamodb.read_units)],
                 ['Write units', formatNumber(c.dynamodb.write_units)],
                 ['Item storage', formatBytes(c.dynamodb.storage_bytes)],
                 ['Reads', formatUsd(usd.dynamodb_reads)],
                 ['Writes', formatUsd(usd.dynamodb_writes)],
                 ['Storage / month', formatUsd(usd.dynamodb_storage_per_month)],
               ]),
               table('S3', [
                 ['Objects', formatNumber(c.s3.objects)],
                 ['Bytes', formatBytes(c.s3.storage_bytes)],
                 ['PUT requests', formatNumber(c.s3.put_requests)],
                 ['Requests', formatUsd(usd.s3_requests)],
                 ['Storage / month', formatUsd(usd.s3_storage_per_month)],
               ]),
               table('SQS', [
                 ['Requests', formatNumber(c.sqs.requests)],
                 ['Cost', formatUsd(usd.sqs)],
               ]),
               table('Prices (USD)', Object.entries(c.prices).map(([k, v]) => [k.replaceAll('_', ' '), String(v)]))),
            el('p.muted.small', 'Request units are counted since the server started, for requests ' +
                                'on this sheet’s routes (background workers excluded); S3 and SQS ' +
                                'requests are lower bounds.'));
    } catch (error) {
      clear(content, el('div.notice.notice-error', error.message));
    }
  }
  load();
  return () => {};
}
