// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Import and export: a CSV or XLSX file goes in through the upload flow of api.md
// (POST .../uploads, PUT the file to the presigned URL with a progress bar, complete),
// and the sheet comes out as CSV or XLSX (GET .../export). An import merges over the
// sheet unless Replace is chosen, and Replace asks first: a stray file never wipes a
// sheet. Files other than .csv and .xlsx are refused before anything is sent. A refusal
// is said once, in the notice under the form (the progress line only says it failed).
// While the sheet is viewed as of a past seq (?at=), nothing is imported: the form says
// so, with the way back to live.
import {download, post, putWithProgress, sheetPath} from '../api.js';
import {busy, clear, confirmDialog, el, formatBytes, formatNumber, toast} from '../ui.js';

/** @param {string} label */
function progressBar(label) {
  const bar = el('progress.progress', {max: 100, value: 0, 'aria-label': label});
  const text = el('span.progress-text.muted', '');
  const node = el('div.progress-row', {hidden: true}, bar, text);
  return {
    node,
    /**
     * @param {number} loaded
     * @param {number|null} total
     * @param {string} [suffix]
     */
    set(loaded, total, suffix = '') {
      node.hidden = false;
      node.classList.remove('progress-failed');
      if (total) {
        bar.max = total;
        bar.value = loaded;
        text.textContent = `${formatBytes(loaded)} of ${formatBytes(total)}${suffix}`;
      } else {
        bar.removeAttribute('value');
        text.textContent = `${formatBytes(loaded)}${suffix}`;
      }
    },
    /** @param {string} message */
    done(message) {
      bar.max = 1;
      bar.value = 1;
      text.textContent = message;
    },
    /** @param {string} message */
    failed(message) {
      node.hidden = false;
      node.classList.add('progress-failed');
      bar.max = 1;
      bar.value = 0;
      text.textContent = message;
    },
  };
}

/**
 * The import format of a file name, or null for a file that is neither.
 * @param {string} name
 * @returns {'csv'|'xlsx'|null}
 */
export function importFormat(name) {
  if (/\.xlsx$/i.test(name)) return 'xlsx';
  if (/\.csv$/i.test(name)) return 'csv';
  return null;
}

/**
 * @param {HTMLElement} body
 * @param {any} ctx the sheet page's context
 */
export function renderTransfer(body, ctx) {
  const {id} = ctx;
  const past = ctx.viewAt !== null && ctx.viewAt !== undefined;
  const fileInput = el('input.input#import-file', {
    type: 'file', accept: '.csv,.xlsx,text/csv', required: true,
  });
  const modeSelect = el('select.input#import-mode', {},
                        el('option', {value: 'merge'}, 'Merge over the sheet'),
                        el('option', {value: 'replace'}, 'Replace the sheet'));
  const atInput = el('input.input.input-narrow#import-at', {value: 'A1', autocomplete: 'off'});
  const worksheetInput = el('input.input#import-worksheet', {
    placeholder: 'first worksheet', autocomplete: 'off',
  });
  const uploadProgress = progressBar('Upload progress');
  const importResult = el('div.import-result', {role: 'status'});
  const importButton = el('button.btn.btn-primary', {type: 'submit', disabled: past},
                          'Upload and import');
  const pastNotice = past
    ? el('div.notice.notice-history.field-actions#import-read-only', {role: 'status'},
         `Read-only: you are viewing the sheet as of seq ${formatNumber(ctx.viewAt)}. ` +
         'An import writes at the head. ',
         el('a', {href: `/console/sheets/${id}/files`}, 'Back to live'))
    : null;

  /** @param {string} message the one place a refusal is said */
  function refused(message) {
    uploadProgress.failed('Not imported');
    clear(importResult, el('div.notice.notice-error', {role: 'alert'}, message));
  }

  async function importFile() {
    const file = fileInput.files[0];
    if (!file) return;
    clear(importResult);
    const format = importFormat(file.name);
    if (!format) {
      refused(`Not imported: ${file.name} is not a .csv or .xlsx file.`);
      return;
    }
    const mode = modeSelect.value;
    if (mode === 'replace' && ctx.nextSeq > 1) {
      const ok = await confirmDialog(
        'Replace the whole sheet?',
        `Every cell of “${ctx.info.name || id}” (${formatNumber(ctx.nextSeq)} entries so far) ` +
        `is replaced by the cells of ${file.name}. The log keeps the history, but the sheet ` +
        'shows only the file afterwards.',
        'Replace the sheet');
      if (!ok) return;
    }
    /** @type {Record<string, any>} */
    const entryBody = {format, mode, at: atInput.value.trim().toUpperCase() || 'A1'};
    if (format === 'xlsx' && worksheetInput.value.trim()) {
      entryBody.sheet = worksheetInput.value.trim();
    }
    const contentType = format === 'xlsx'
      ? 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
      : 'text/csv';
    try {
      const upload = await post(sheetPath(id, '/uploads'), {
        type: 'Import', body: entryBody, content_type: contentType, size: file.size,
      });
      uploadProgress.set(0, file.size);
      await putWithProgress(upload.url, file, contentType,
                            (loaded, total) => uploadProgress.set(loaded, total));
      uploadProgress.set(file.size, file.size, ' · checking and appending…');
      const entry = await post(sheetPath(id, `/uploads/${upload.upload_id}/complete`), {});
      uploadProgress.done(`Imported ${file.name} (${formatBytes(file.size)})`);
      ctx.feed?.refresh();
      clear(importResult, el('div.notice.notice-success', {},
                             `Imported as entry seq ${entry.seq}. `,
                             el('a', {href: `/console/sheets/${id}`}, 'Open the grid')));
      toast(`Imported ${file.name}`, 'success');
    } catch (error) {
      // Said once, here (not again as a toast); nothing was appended.
      refused(`${file.name} was refused; nothing was written. ${error.message}`);
    }
  }

  const importForm = el('form.form-grid#import-form', {
    'aria-label': 'Import a file',
    onsubmit(/** @type {Event} */ event) {
      event.preventDefault();
      if (past) {  // the button is off; an Enter in a field submits all the same
        refused(`Not imported: the sheet is shown as of seq ${ctx.viewAt} (read-only). ` +
                'Go back to live to import.');
        return;
      }
      busy(importButton, importFile).catch(() => {});
    },
  },
  pastNotice,
  el('div.field', {}, el('label', {for: 'import-file'}, 'File (CSV or XLSX)'), fileInput),
  el('div.field', {}, el('label', {for: 'import-mode'}, 'Mode'), modeSelect),
  el('div.field', {}, el('label', {for: 'import-at'}, 'At (top-left cell)'), atInput),
  el('div.field', {}, el('label', {for: 'import-worksheet'}, 'Worksheet (XLSX)'), worksheetInput),
  el('div.field-actions', {}, importButton),
  uploadProgress.node, importResult);

  const downloadProgress = progressBar('Download progress');
  const exportButtons = ['csv', 'xlsx'].map((format) => {
    const btn = el('button.btn', {type: 'button', id: `export-${format}`}, `Download ${format.toUpperCase()}`);
    btn.addEventListener('click', () => busy(btn, async () => {
      const name = `${(ctx.info.name || id).replace(/[^\w.-]+/g, '_')}.${format}`;
      downloadProgress.set(0, null);
      try {
        const result = await download(sheetPath(id, `/export?format=${format}`), name,
                                      (loaded, total) => downloadProgress.set(loaded, total));
        downloadProgress.done(`Downloaded ${name} (${formatBytes(result.bytes)})`);
      } catch (error) {
        downloadProgress.failed(`Not downloaded: ${error.message}`);
        throw error;
      }
    }));
    return btn;
  });

  body.append(el('div.two-columns', {},
                 el('section.card', {},
                    el('h2', 'Import'),
                    el('p.muted', 'Appends an Import entry through the upload flow: the file is ' +
                                  'PUT to a presigned URL, then checked and appended. ' +
                                  'A file that does not parse is refused with nothing written.'),
                    importForm),
                 el('section.card', {},
                    el('h2', 'Export'),
                    el('p.muted', 'The used range at the head, as RFC 4180 CSV or as an XLSX ' +
                                  'workbook (formulas with their cached results).'),
                    el('div.toolbar', {}, exportButtons),
                    downloadProgress.node)));
  return () => {};
}
