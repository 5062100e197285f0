// Blobs: the S3 stand-in browsed by prefix ("/" as the delimiter), with each object's
// size, type, tags and a download.
import {download, get, query} from '../api.js';
import {badge, busy, button, clear, el, formatBytes, formatTime} from '../ui.js';

const PAGE_SIZE = 200;

function blobPath(key) {
  return `/v1/blobs/${key.split('/').map(encodeURIComponent).join('/')}`;
}

export function renderBlobs(main, {prefix}) {
  let alive = true;
  let continuation = null;
  const tbody = el('tbody');
  const status = el('p.muted', 'Loading…');
  const more = button('More', () => load(), '', {hidden: true});

  const parts = prefix.split('/').filter(Boolean);
  const crumbs = [el('a', {href: '/console/blobs'}, 'root')];
  parts.forEach((part, i) => {
    const upTo = `${parts.slice(0, i + 1).join('/')}/`;
    crumbs.push(' / ', i === parts.length - 1 ? el('strong', part)
                                              : el('a', {href: `/console/blobs${query({prefix: upTo})}`}, part));
  });

  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Blobs'),
                    el('nav.crumbs', {'aria-label': 'Prefix'}, crumbs)),
                 el('div.card', {},
                    el('table.table#blobs-table', {},
                       el('thead', {}, el('tr', {}, el('th', 'Name'), el('th.num', 'Size'),
                                          el('th', 'Type'), el('th', 'Tags'), el('th', 'Created'),
                                          el('th', {'aria-label': 'Actions'}))),
                       tbody),
                    status, more)));

  async function load() {
    try {
      const page = await get(`/v1/blobs${query({prefix, delimiter: '/', limit: PAGE_SIZE,
                                                 continuation})}`);
      if (!alive) return;
      for (const sub of page.prefixes) {
        tbody.append(el('tr.folder-row', {},
                        el('td', {colspan: 6},
                           el('a', {href: `/console/blobs${query({prefix: sub})}`},
                              el('span.folder-icon', {'aria-hidden': 'true'}, '▸ '),
                              sub.slice(prefix.length)))));
      }
      for (const blob of page.keys) {
        const tags = Object.entries(blob.tags || {});
        const name = blob.key.slice(prefix.length);
        const getButton = button('Download', () => busy(getButton, () =>
            download(blobPath(blob.key), name.split('/').pop())), 'small.btn-ghost',
            {'aria-label': `Download ${blob.key}`});
        tbody.append(el('tr', {},
                        el('td', {}, el('code', name)),
                        el('td.num', formatBytes(blob.size)),
                        el('td.muted', blob.content_type || '—'),
                        el('td', {}, tags.length ? tags.map(([k, v]) => badge(`${k}=${v}`,
                                                        k === 'auto-delete' ? 'warning' : 'muted'))
                                                 : el('span.muted', '—')),
                        el('td.muted', formatTime(blob.created)),
                        el('td.actions', {}, getButton)));
      }
      continuation = page.continuation;
      more.hidden = !continuation;
      status.hidden = tbody.children.length > 0;
      status.textContent = 'Nothing under this prefix.';
    } catch (error) {
      if (alive) {
        status.hidden = false;
        status.textContent = `Could not list blobs: ${error.message}`;
      }
    }
  }
  load();
  return () => { alive = false; };
}
