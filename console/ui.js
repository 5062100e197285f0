// Small DOM helpers shared by the pages: element building, formatting, toasts and
// modal dialogs. No framework: pages build their DOM with el() and replace it on change.

// el('div.card#main', {onclick, title, ...}, child, ...): tag with optional .classes and
// #id; attributes starting with "on" become listeners, `dataset`/`style` objects are
// assigned; children may be strings, nodes, arrays, null or false (skipped).
export function el(spec, attrs = {}, ...children) {
  const match = /^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i.exec(spec);
  const node = document.createElement(match[1] || 'div');
  for (const part of match[2].match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  if (attrs instanceof Node || typeof attrs === 'string' || Array.isArray(attrs)) {
    children.unshift(attrs);
    attrs = {};
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      node.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'dataset' || key === 'style') {
      Object.assign(node[key], value);
    } else if (key === 'text') {
      node.textContent = value;
    } else if (key in node && typeof value !== 'string') {
      node[key] = value;
    } else {
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : String(child));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatNumber(n) {
  if (n === null || n === undefined) return '—';
  return Number(n).toLocaleString('en-US');
}

// Unix seconds as "2026-01-01 12:00:00" in UTC (the server's clock may be manual).
export function formatTime(unixSeconds) {
  if (unixSeconds === null || unixSeconds === undefined) return '—';
  return new Date(unixSeconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

export function formatUsd(usd) {
  if (usd === 0) return '$0';
  if (Math.abs(usd) < 0.01) return `$${usd.toPrecision(3)}`;
  return `$${usd.toFixed(2)}`;
}

// A JSON value shortened for a table cell.
export function preview(value, max = 120) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

let toastHost = null;

// A short message in the corner; `kind` is info, success, warning or error. Stays until
// dismissed for errors, a few seconds otherwise.
export function toast(message, kind = 'info') {
  if (!toastHost) {
    toastHost = el('div.toasts', {role: 'status', 'aria-live': 'polite'});
    document.body.append(toastHost);
  }
  const item = el(`div.toast.toast-${kind}`, {}, el('span', message),
                  el('button.toast-close', {
                    'aria-label': 'Dismiss',
                    onclick: () => item.remove(),
                  }, '×'));
  toastHost.append(item);
  if (kind !== 'error') setTimeout(() => item.remove(), 6000);
  return item;
}

// A modal dialog built on <dialog>. `body` is a node; `actions` are
// [{label, value, kind}] buttons; resolves with the value of the button pressed (or
// null on Escape / Cancel). `onSubmit(value)` may return false to keep it open.
export function modal({title, body, actions, initialFocus}) {
  return new Promise((resolve) => {
    const form = el('form.modal-body', {method: 'dialog'});
    const dialog = el('dialog.modal', {'aria-label': title},
                      el('h2.modal-title', title), form);
    if (body) form.append(body);
    const buttons = el('div.modal-actions');
    for (const action of actions) {
      buttons.append(el(`button.btn${action.kind ? `.btn-${action.kind}` : ''}`, {
        type: action.value === null ? 'button' : 'submit',
        value: action.value === null ? '' : action.value,
        onclick: action.value === null ? () => dialog.close('') : undefined,
      }, action.label));
    }
    form.append(buttons);
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue || null);
    });
    document.body.append(dialog);
    dialog.showModal();
    (initialFocus ? dialog.querySelector(initialFocus) : buttons.lastChild)?.focus();
  });
}

export async function confirmDialog(title, message, confirmLabel = 'Delete') {
  const answer = await modal({
    title,
    body: el('p', message),
    actions: [
      {label: 'Cancel', value: null},
      {label: confirmLabel, value: 'yes', kind: 'danger'},
    ],
  });
  return answer === 'yes';
}

// A small key/value table: rows are [label, value] with value a string or node.
export function keyValues(rows) {
  return el('dl.kv', {}, rows.map(([k, v]) => [el('dt', k), el('dd', v ?? '—')]));
}

export function button(label, onclick, kind = '', attrs = {}) {
  return el(`button.btn${kind ? `.btn-${kind}` : ''}`, {type: 'button', onclick, ...attrs},
            label);
}

// Runs `action` with `btn` disabled, reporting a failure as a toast.
export async function busy(btn, action) {
  btn.disabled = true;
  try {
    return await action();
  } catch (error) {
    toast(error.message, 'error');
    return undefined;
  } finally {
    btn.disabled = false;
  }
}

export function badge(text, kind = '') {
  return el(`span.badge${kind ? `.badge-${kind}` : ''}`, text);
}
