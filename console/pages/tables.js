// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Tables: the tables behind the API, browsed as dynamodb-admin browses DynamoDB's
// (GET /v1/admin/tables/{name}/items): a Scan of the whole table or a Query of one
// partition key with a sort-key range and direction, a filter on any attribute (applied
// to each page after the read, as DynamoDB's FilterExpression), pages of up to 1000
// items, and each item as JSON. Read-only: an entry's metadata is edited through the
// API (PATCH .../entries/{seq}) from the item's view. Times (created, created_at, ...)
// read as local date and time next to the stored number (seconds or microseconds).
import {get, patch, query, sheetPath} from '../api.js';
import {formatStoredTime, isTimeAttribute, storedTime} from '../format.js';
import {busy, button, clear, el, formatNumber, modal, preview, toast} from '../ui.js';

const METADATA_FIELDS = ['snapshot', 'history', 'pending'];

/**
 * @typedef {{name: string, description: string, partition_key: string[], sort_key: string[],
 *            attributes: string[]}} TableInfo
 */

/**
 * The query string of a browse request, from the form's values.
 * @param {{partition: string[], from: string, to: string, order: string, limit: number,
 *          start?: any[]|null, filter: string, op: string, value: string}} form
 * @param {TableInfo} table
 */
export function browseQuery(form, table) {
  const partition = form.partition.map((v, i) => (/^-?\d+$/.test(v) && i > 0 ? Number(v) : v));
  const queried = partition.length === table.partition_key.length && partition.every((v) => v !== '');
  return query({
    partition: queried ? JSON.stringify(partition) : null,
    from: queried ? form.from : null,
    to: queried ? form.to : null,
    order: queried && form.order === 'desc' ? 'desc' : null,
    limit: form.limit,
    start: form.start ? JSON.stringify(form.start) : null,
    filter: form.filter || null,
    op: form.filter ? form.op : null,
    value: form.filter && !form.op.endsWith('exists') ? form.value : null,
  });
}

/**
 * @param {HTMLElement} main
 * @param {{name: string, params: URLSearchParams}} route
 */
export function renderTables(main, {name, params}) {
  let alive = true;
  const list = el('nav.table-list#table-list', {'aria-label': 'Tables'});
  const content = el('div.table-browser');
  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Tables'),
                    el('p.muted.small', 'Read-only, eventually consistent pages, charged in ' +
                                        'read units like DynamoDB.')),
                 el('div.tables-layout', {}, el('div.card', {}, list), content)));

  (async () => {
    /** @type {TableInfo[]} */
    let tables;
    try {
      tables = (await get('/v1/admin/tables')).tables;
    } catch (error) {
      clear(content, el('div.notice.notice-error', error.message));
      return;
    }
    if (!alive) return;
    clear(list, el('ul', {}, tables.map((t) => el('li', {},
      el('a', {href: `/console/tables/${t.name}`, 'aria-current': t.name === name ? 'page' : false}, t.name)))));
    const table = tables.find((t) => t.name === name);
    if (!table) {
      clear(content, el('div.card', {}, el('p', name ? `No table '${name}'.` : 'Choose a table.'),
                        el('dl.kv', {}, tables.map((t) => [el('dt', {}, el('a', {href: `/console/tables/${t.name}`}, t.name)),
                                                           el('dd', t.description)]))));
      return;
    }
    browse(table);
  })();

  /** @param {TableInfo} table */
  function browse(table) {
    const keyInputs = table.partition_key.map((column, i) => el('input.input', {
      id: `key-${i}`, autocomplete: 'off', value: params.get(column) || '',
      placeholder: i === 0 && column.includes('sheet') ? 'sheet id' : column,
    }));
    const fromInput = el('input.input.input-narrow#sort-from', {autocomplete: 'off'});
    const toInput = el('input.input.input-narrow#sort-to', {autocomplete: 'off'});
    const orderSelect = el('select.input#sort-order', {},
                           el('option', {value: 'asc'}, 'ascending'),
                           el('option', {value: 'desc'}, 'descending'));
    const filterSelect = el('select.input#filter-attribute', {},
                            el('option', {value: ''}, '(no filter)'),
                            table.attributes.map((a) => el('option', {value: a}, a)));
    const opSelect = el('select.input#filter-op', {},
                        ['eq', 'ne', 'contains', 'begins_with', 'exists', 'not_exists'].map((o) =>
                          el('option', {value: o}, o.replace('_', ' '))));
    const valueInput = el('input.input#filter-value', {autocomplete: 'off'});
    const limitInput = el('input.input.input-narrow#page-limit', {type: 'number', min: 1, max: 1000, value: 50});
    const runButton = el('button.btn.btn-primary', {type: 'submit'}, 'Run');
    const results = el('div#table-results');
    /** @type {any[]|null} */
    let next = null;
    /** @type {(any[]|null)[]} the starts of the pages before this one, to go back */
    const starts = [];
    /** @type {any[]|null} this page's start */
    let current = null;

    const form = el('form.query-form', {
      onsubmit(/** @type {Event} */ event) {
        event.preventDefault();
        starts.length = 0;
        busy(runButton, () => run(null));
      },
    },
    el('fieldset', {},
       el('legend', `Partition key: ${table.partition_key.join(', ')} (empty: scan the table)`),
       keyInputs.map((input, i) => el('div.field', {},
         el('label', {for: `key-${i}`}, table.partition_key[i]), input))),
    table.sort_key.length ? el('fieldset', {},
      el('legend', `Sort key: ${table.sort_key.join(', ')}`),
      el('div.field', {}, el('label', {for: 'sort-from'}, `${table.sort_key[0]} from`), fromInput),
      el('div.field', {}, el('label', {for: 'sort-to'}, 'to'), toInput),
      el('div.field', {}, el('label', {for: 'sort-order'}, 'Order'), orderSelect)) : null,
    el('fieldset', {},
       el('legend', 'Filter (each page, after the read)'),
       el('div.field', {}, el('label', {for: 'filter-attribute'}, 'Attribute'), filterSelect),
       el('div.field', {}, el('label', {for: 'filter-op'}, 'Condition'), opSelect),
       el('div.field', {}, el('label', {for: 'filter-value'}, 'Value'), valueInput)),
    el('div.form-row', {},
       el('div.field', {}, el('label', {for: 'page-limit'}, 'Items per page'), limitInput),
       el('div.field.field-button', {}, runButton)));

    clear(content, el('div.card', {}, el('h2', table.name), el('p.muted', table.description), form),
          el('div.card', {}, results));

    /** @param {any[]|null} start */
    async function run(start) {
      current = start;
      const q = browseQuery({
        partition: keyInputs.map((i) => i.value.trim()),
        from: fromInput.value.trim(), to: toInput.value.trim(), order: orderSelect.value,
        limit: Number(limitInput.value) || 50, start, filter: filterSelect.value,
        op: opSelect.value, value: valueInput.value,
      }, table);
      try {
        const page = await get(`/v1/admin/tables/${encodeURIComponent(table.name)}/items${q}`);
        if (!alive) return;
        next = page.next;
        showPage(page, start);
      } catch (error) {
        clear(results, el('div.notice.notice-error', {role: 'alert'}, error.message));
      }
    }

    /**
     * @param {any} page
     * @param {any[]|null} start
     */
    function showPage(page, start) {
      const columns = table.attributes;
      const rows = page.items.map((/** @type {any} */ item) => el('tr', {},
        columns.map((c) => el('td', {}, cellText(item[c], c))),
        el('td.actions', {}, button('JSON', () => showItem(item), 'small.btn-ghost'))));
      clear(results,
            el('div.card-head', {},
               el('span.muted', `${formatNumber(page.items.length)} item${page.items.length === 1 ? '' : 's'}` +
                                (page.scanned !== page.items.length ? ` (${formatNumber(page.scanned)} read)` : '')),
               el('div.button-group', {},
                  starts.length ? button('Previous page', () => {
                    const previous = starts.pop() ?? null;
                    run(previous);
                  }, 'small') : null,
                  page.next ? button('Next page', () => {
                    starts.push(start);
                    run(next);
                  }, 'small') : null)),
            rows.length ? el('div.table-wrap', {}, el('table.table.table-compact#items-table', {},
              el('thead', {}, el('tr', {}, columns.map((c) => el('th', {scope: 'col'}, c)),
                                 el('th', {'aria-label': 'Actions'}))),
              el('tbody', {}, rows)))
              : el('p.muted', 'No items on this page.'));
    }

    /**
     * @param {any} value
     * @param {string} column
     */
    function cellText(value, column) {
      if (value === null || value === undefined) return el('span.muted', '—');
      const time = isTimeAttribute(column) ? storedTime(value) : null;
      if (time) {
        const utc = new Date(Math.floor(time.micros / 1000)).toISOString();
        return el('span.stored-time', {title: `${utc.replace('T', ' ').replace('Z', '')} UTC`},
                  el('time', {datetime: utc}, formatStoredTime(value)), ' ',
                  el('span.muted.small.raw-time', String(value)));
      }
      return preview(typeof value === 'string' ? value : JSON.stringify(value), 60);
    }

    /** @param {any} item */
    async function showItem(item) {
      const json = el('pre.json#item-json', JSON.stringify(item, null, 2));
      const editable = table.name === 'entry';
      /** @type {Record<string, any>} */
      let metadata = {};
      try {
        metadata = item.metadata ? JSON.parse(item.metadata) : {};
      } catch { /* shown as stored */ }
      const inputs = METADATA_FIELDS.map((field) => el('input.input', {
        id: `meta-${field}`, value: metadata[field] ?? '', autocomplete: 'off',
      }));
      const answer = await modal({
        title: `${table.name} item`,
        body: el('div', {}, json, editable ? el('fieldset.meta-editor', {},
          el('legend', `Entry metadata (seq ${item.seq}), through PATCH …/entries/${item.seq}`),
          METADATA_FIELDS.map((field, i) => el('div.field', {},
            el('label', {for: `meta-${field}`}, `${field} (empty clears)`), inputs[i]))) : null),
        actions: editable
          ? [{label: 'Close', value: null}, {label: 'Save metadata', value: 'save', kind: 'primary'}]
          : [{label: 'Close', value: 'close'}],
      });
      if (answer !== 'save') return;
      /** @type {Record<string, string|null>} */
      const changes = {};
      METADATA_FIELDS.forEach((field, i) => {
        const value = inputs[i].value;
        const before = metadata[field] ?? '';
        if (value !== before) changes[field] = value === '' ? null : value;
      });
      if (Object.keys(changes).length === 0) return;
      try {
        await patch(sheetPath(item.sheet_id, `/entries/${item.seq}`), changes);
        toast(`Saved the metadata of seq ${item.seq}`, 'success');
        run(current);
      } catch (error) {
        toast(error.message, 'error');
      }
    }

    if (keyInputs.some((i) => i.value)) run(null);
  }

  return () => { alive = false; };
}
