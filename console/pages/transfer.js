// Import and export: a CSV or XLSX file goes in through the upload flow of api.md
// (POST .../uploads, PUT the file to the presigned URL with a progress bar, complete),
// and the sheet comes out as CSV or XLSX (GET .../export).
import {download, post, putWithProgress, sheetPath} from '../api.js';
import {busy, clear, el, formatBytes, toast} from '../ui.js';

function progressBar(label) {
  const bar = el('progress.progress', {max: 100, value: 0, 'aria-label': label});
  const text = el('span.progress-text.muted', '');
  const node = el('div.progress-row', {hidden: true}, bar, text);
  return {
    node,
    set(loaded, total, suffix = '') {
      node.hidden = false;
      if (total) {
        bar.max = total;
        bar.value = loaded;
        text.textContent = `${formatBytes(loaded)} of ${formatBytes(total)}${suffix}`;
      } else {
        bar.removeAttribute('value');
        text.textContent = `${formatBytes(loaded)}${suffix}`;
      }
    },
    done(message) {
      bar.max = 1;
      bar.value = 1;
      text.textContent = message;
    },
  };
}

export function renderTransfer(body, ctx) {
  const {id} = ctx;
  const fileInput = el('input.input#import-file', {
    type: 'file', accept: '.csv,.xlsx,text/csv', 'aria-label': 'File to import', required: true,
  });
  const modeSelect = el('select.input#import-mode', {'aria-label': 'Mode'},
                        el('option', {value: 'replace'}, 'Replace the sheet'),
                        el('option', {value: 'merge'}, 'Merge over the sheet'));
  const atInput = el('input.input.input-narrow#import-at', {value: 'A1', 'aria-label': 'Anchor cell'});
  const worksheetInput = el('input.input#import-worksheet', {
    placeholder: 'first worksheet', 'aria-label': 'Worksheet (XLSX)',
  });
  const uploadProgress = progressBar('Upload progress');
  const importResult = el('div.import-result', {role: 'status'});
  const importButton = el('button.btn.btn-primary', {type: 'submit'}, 'Upload and import');

  const importForm = el('form.form-grid', {
    'aria-label': 'Import a file',
    onsubmit(event) {
      event.preventDefault();
      const file = fileInput.files[0];
      if (!file) return;
      busy(importButton, async () => {
        clear(importResult);
        const format = /\.xlsx$/i.test(file.name) ? 'xlsx' : 'csv';
        const entryBody = {format, mode: modeSelect.value, at: atInput.value.trim() || 'A1'};
        if (format === 'xlsx' && worksheetInput.value.trim()) {
          entryBody.sheet = worksheetInput.value.trim();
        }
        const contentType = format === 'xlsx'
            ? 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
            : 'text/csv';
        const upload = await post(sheetPath(id, '/uploads'), {
          type: 'Import', body: entryBody, content_type: contentType, size: file.size,
        });
        uploadProgress.set(0, file.size);
        await putWithProgress(upload.url, file, contentType,
                              (loaded, total) => uploadProgress.set(loaded, total));
        uploadProgress.set(file.size, file.size, ' · checking and appending…');
        const entry = await post(sheetPath(id, `/uploads/${upload.upload_id}/complete`), {});
        uploadProgress.done(`Imported ${file.name} (${formatBytes(file.size)})`);
        ctx.feed.refresh();
        clear(importResult, el('div.notice.notice-success', {},
                               `Imported as entry seq ${entry.seq}. `,
                               el('a', {href: `/console/sheets/${id}`}, 'Open the grid')));
        toast(`Imported ${file.name}`, 'success');
      }).catch(() => {});
    },
  },
  el('label.field', {}, el('span', 'File (CSV or XLSX)'), fileInput),
  el('label.field', {}, el('span', 'Mode'), modeSelect),
  el('label.field', {}, el('span', 'At'), atInput),
  el('label.field', {}, el('span', 'Worksheet (XLSX)'), worksheetInput),
  el('div.field-actions', {}, importButton),
  uploadProgress.node, importResult);

  const downloadProgress = progressBar('Download progress');
  const exportButtons = ['csv', 'xlsx'].map((format) => {
    const btn = el('button.btn', {type: 'button', id: `export-${format}`}, `Download ${format.toUpperCase()}`);
    btn.addEventListener('click', () => busy(btn, async () => {
      const name = `${(ctx.info.name || id).replace(/[^\w.-]+/g, '_')}.${format}`;
      downloadProgress.set(0, null);
      const result = await download(sheetPath(id, `/export?format=${format}`), name,
                                    (loaded, total) => downloadProgress.set(loaded, total));
      downloadProgress.done(`Downloaded ${name} (${formatBytes(result.bytes)})`);
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
