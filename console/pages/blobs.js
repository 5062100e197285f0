// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Blobs: the S3 stand-in browsed by prefix ("/" as the delimiter), with each object's
// size, type, tags and a download; upload a file under the prefix, preview an object
// (text as text, images as images, the first 64 KiB through a Range request), edit its
// tags, delete it after a confirmation. The server's own areas (snapshots/, archives/,
// uploads/, entries/) are read-only: their objects can be read, never changed.
import {del, download, get, put, putWithProgress, query, rawRequest} from '../api.js';
import {badge, busy, button, clear, confirmDialog, el, formatBytes, formatTime, modal, toast}
  from '../ui.js';

const PAGE_SIZE = 200;
const PREVIEW_BYTES = 64 * 1024;
const SERVER_AREAS = ['snapshots/', 'archives/', 'uploads/', 'entries/'];

/** @param {string} key */
export function blobPath(key) {
  return `/v1/blobs/${key.split('/').map(encodeURIComponent).join('/')}`;
}

/** @param {string} key */
export function isServerKey(key) {
  return SERVER_AREAS.some((area) => key.startsWith(area));
}

/**
 * How an object is previewed: 'text', 'image' or null (download it instead).
 * @param {string} contentType
 * @param {string} key
 */
export function previewKind(contentType, key) {
  const type = (contentType || '').toLowerCase();
  if (/^image\/(png|jpeg|gif|webp|svg\+xml)$/.test(type)) return 'image';
  if (/^text\/|json|xml|csv|javascript/.test(type) || /\.(txt|csv|json|jsonl|md|log)$/i.test(key)) {
    return 'text';
  }
  if (type === 'application/octet-stream' || type === '') return 'text';
  return null;
}

/**
 * Tags typed as "key=value" lines into an object; throws naming a bad line.
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function parseTags(text) {
  /** @type {Record<string, string>} */
  const tags = {};
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`line ${i + 1}: write key=value`);
    tags[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return tags;
}

/**
 * @param {HTMLElement} main
 * @param {{prefix: string}} route
 */
export function renderBlobs(main, {prefix}) {
  let alive = true;
  /** @type {string|null} */
  let continuation = null;
  const tbody = el('tbody');
  const status = el('p.muted', 'Loading…');
  const more = button('More', () => load(), '', {hidden: true});
  const readOnly = isServerKey(prefix);

  const parts = prefix.split('/').filter(Boolean);
  /** @type {any[]} */
  const crumbs = [el('a', {href: '/console/blobs'}, 'root')];
  parts.forEach((part, i) => {
    const upTo = `${parts.slice(0, i + 1).join('/')}/`;
    crumbs.push(' / ', i === parts.length - 1 ? el('strong', part)
      : el('a', {href: `/console/blobs${query({prefix: upTo})}`}, part));
  });

  const fileInput = el('input.input#blob-file', {type: 'file'});
  const nameInput = el('input.input#blob-name', {placeholder: 'the file’s name', autocomplete: 'off'});
  const uploadButton = el('button.btn.btn-primary', {type: 'submit'}, 'Upload');
  const progress = el('progress.progress', {max: 1, value: 0, hidden: true, 'aria-label': 'Upload progress'});
  const uploadForm = el('form.form-row#blob-upload', {
    'aria-label': 'Upload a blob',
    onsubmit(/** @type {Event} */ event) {
      event.preventDefault();
      busy(uploadButton, upload);
    },
  },
  el('div.field', {}, el('label', {for: 'blob-file'}, 'File'), fileInput),
  el('div.field', {}, el('label', {for: 'blob-name'}, `Name under ${prefix || 'the root'}`), nameInput),
  el('div.field.field-button', {}, uploadButton), progress);

  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Blobs'),
                    el('nav.crumbs', {'aria-label': 'Prefix'}, crumbs)),
                 readOnly
                   ? el('div.notice', {}, `${prefix.split('/')[0]}/ is the server’s own area: its ` +
                                          'objects can be read and downloaded, not changed.')
                   : el('div.card', {}, uploadForm),
                 el('div.card', {},
                    el('div.table-wrap', {}, el('table.table#blobs-table', {},
                       el('thead', {}, el('tr', {}, el('th', 'Name'), el('th.num', 'Size'),
                                          el('th', 'Type'), el('th', 'Tags'), el('th', 'Created'),
                                          el('th', {'aria-label': 'Actions'}))),
                       tbody)),
                    status, more)));

  async function upload() {
    const file = fileInput.files[0];
    if (!file) {
      toast('Choose a file first', 'warning');
      return;
    }
    const name = nameInput.value.trim() || file.name;
    const key = prefix + name;
    progress.hidden = false;
    await putWithProgress(blobPath(key), file, file.type || 'application/octet-stream',
                          (loaded, total) => {
                            progress.max = total;
                            progress.value = loaded;
                          }, {token: true});
    toast(`Uploaded ${key}`, 'success');
    fileInput.value = '';
    nameInput.value = '';
    reload();
  }

  function reload() {
    continuation = null;
    clear(tbody);
    load();
  }

  /** @param {any} blob */
  async function preview(blob) {
    const kind = previewKind(blob.content_type, blob.key);
    let body;
    if (kind === 'image') {
      const response = await rawRequest('GET', blobPath(blob.key));
      const url = URL.createObjectURL(await response.blob());
      body = el('img.blob-preview-image', {src: url, alt: blob.key});
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } else if (kind === 'text') {
      const response = await rawRequest('GET', blobPath(blob.key),
                                        {headers: {Range: `bytes=0-${PREVIEW_BYTES - 1}`}});
      const text = response.status === 416 ? '' : await response.text();
      body = el('div', {},
                el('pre.blob-preview#blob-preview-text', text || '(empty)'),
                blob.size > PREVIEW_BYTES ? el('p.muted.small', `The first ${formatBytes(PREVIEW_BYTES)} ` +
                                                 `of ${formatBytes(blob.size)}.`) : null);
    } else {
      body = el('p', `${blob.content_type} cannot be previewed here; download it.`);
    }
    await modal({title: blob.key, body, actions: [{label: 'Close', value: 'close'}]});
  }

  /** @param {any} blob */
  async function editTags(blob) {
    const area = el('textarea.input.textarea#tag-editor', {rows: 5},
                    Object.entries(blob.tags || {}).map(([k, v]) => `${k}=${v}`).join('\n'));
    const answer = await modal({
      title: `Tags of ${blob.key}`,
      body: el('div', {}, el('label', {for: 'tag-editor'}, 'One key=value per line'), area,
               el('p.muted.small', 'auto-delete=true makes the lifecycle sweep delete the object ' +
                                   'once it is older than --orphan-ttl.')),
      actions: [{label: 'Cancel', value: null}, {label: 'Save tags', value: 'save', kind: 'primary'}],
      initialFocus: '#tag-editor',
    });
    if (answer !== 'save') return;
    try {
      const tags = parseTags(area.value);
      await put(`${blobPath(blob.key)}?tagging`, {tags});
      toast(`Saved the tags of ${blob.key}`, 'success');
      reload();
    } catch (error) {
      toast(error.message, 'error');
    }
  }

  /** @param {any} blob */
  async function remove(blob) {
    const ok = await confirmDialog('Delete blob?', `Delete ${blob.key} (${formatBytes(blob.size)})? ` +
                                   'This cannot be undone.');
    if (!ok) return;
    try {
      await del(blobPath(blob.key));
      toast(`Deleted ${blob.key}`, 'success');
      reload();
    } catch (error) {
      toast(error.message, 'error');
    }
  }

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
        const changeable = !isServerKey(blob.key);
        const getButton = button('Download', () => busy(getButton, () =>
          download(blobPath(blob.key), name.split('/').pop() || name)), 'small.btn-ghost',
        {'aria-label': `Download ${blob.key}`});
        tbody.append(el('tr', {dataset: {key: blob.key}},
                        el('td', {}, el('code', name)),
                        el('td.num', formatBytes(blob.size)),
                        el('td.muted', blob.content_type || '—'),
                        el('td', {}, tags.length ? tags.map(([k, v]) => badge(`${k}=${v}`,
                          k === 'auto-delete' ? 'warning' : 'muted'))
                          : el('span.muted', '—')),
                        el('td.muted', formatTime(blob.created)),
                        el('td.actions', {},
                           button('Preview', () => preview(blob).catch((e) => toast(e.message, 'error')),
                                  'small.btn-ghost', {'aria-label': `Preview ${blob.key}`}),
                           getButton,
                           changeable ? button('Tags', () => editTags(blob), 'small.btn-ghost',
                                               {'aria-label': `Edit the tags of ${blob.key}`}) : null,
                           changeable ? button('Delete', () => remove(blob), 'small.btn-ghost-danger',
                                               {'aria-label': `Delete ${blob.key}`}) : null)));
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
