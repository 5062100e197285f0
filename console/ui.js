// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Small DOM helpers shared by the pages: element building, formatting, toasts and
// modal dialogs. No framework: pages build their DOM with el() and replace it on change.

// el('div.card#main', {onclick, title, ...}, child, ...): tag with optional .classes and
// #id; attributes starting with "on" become listeners, `dataset`/`style` objects are
// assigned; children may be strings, nodes, arrays, null or false (skipped).
/**
 * An element: its known properties typed, any other (an input's value, a dialog's
 * showModal) loosely, as pages use the element they asked for.
 * @typedef {HTMLElement & Record<string, any>} Elem
 * @typedef {Node|string|number|null|undefined|false|any[]} Child
 */

/**
 * @param {string} spec
 * @param {Record<string, any>|Child} [attrs]
 * @param {...Child} children
 * @returns {Elem}
 */
export function el(spec, attrs = {}, ...children) {
  const match = /^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i.exec(spec);
  if (!match) throw new Error(`el: bad spec '${spec}'`);
  const node = /** @type {Elem} */ (document.createElement(match[1] || 'div'));
  for (const part of match[2].match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  if (attrs instanceof Node || typeof attrs !== 'object' || Array.isArray(attrs) || attrs === null) {
    children.unshift(/** @type {Child} */ (attrs));
    attrs = {};
  }
  for (const [key, value] of Object.entries(/** @type {Record<string, any>} */ (attrs))) {
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

/**
 * @param {Node} node
 * @param {Child[]} children
 */
function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else /** @type {Element} */ (node).append(child instanceof Node ? child : String(child));
  }
}

/**
 * @param {Element} node
 * @param {...Child} children
 */
export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// Formatting lives in format.js (pure, unit-tested); pages import it from either.
export {formatBytes, formatNumber, formatTime, formatUsd, preview} from './format.js';

/** @type {HTMLElement|null} */
let toastHost = null;

// A short message in the corner; `kind` is info, success, warning or error. Stays until
// dismissed for errors, a few seconds otherwise.
/**
 * @param {string} message
 * @param {string} [kind]
 */
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
/**
 * @param {{title: string, body?: Node, actions: {label: string, value: string|null, kind?: string}[],
 *          initialFocus?: string}} options
 * @returns {Promise<string|null>}
 */
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
    /** @type {HTMLElement|null} */ (initialFocus ? dialog.querySelector(initialFocus) : buttons.lastElementChild)?.focus();
  });
}

/**
 * @param {string} title
 * @param {string|Node} message
 * @param {string} [confirmLabel]
 * @param {string} [kind] the confirm button's kind
 */
export async function confirmDialog(title, message, confirmLabel = 'Delete', kind = 'danger') {
  const answer = await modal({
    title,
    body: el('p', message),
    actions: [
      {label: 'Cancel', value: null},
      {label: confirmLabel, value: 'yes', kind},
    ],
  });
  return answer === 'yes';
}

// A small key/value table: rows are [label, value] with value a string or node.
/** @param {[string, Child][]} rows */
export function keyValues(rows) {
  return el('dl.kv', {}, rows.map(([k, v]) => [el('dt', k), el('dd', v ?? '—')]));
}

/**
 * @param {Child} label
 * @param {(event: MouseEvent) => any} onclick
 * @param {string} [kind]
 * @param {Record<string, any>} [attrs]
 */
export function button(label, onclick, kind = '', attrs = {}) {
  return el(`button.btn${kind ? `.btn-${kind}` : ''}`, {type: 'button', onclick, ...attrs},
            label);
}

// Runs `action` with `btn` disabled, reporting a failure as a toast.
/**
 * @template T
 * @param {Elem} btn
 * @param {() => Promise<T>} action
 * @returns {Promise<T|undefined>}
 */
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

/**
 * @param {string} text
 * @param {string} [kind]
 */
export function badge(text, kind = '') {
  return el(`span.badge${kind ? `.badge-${kind}` : ''}`, text);
}

/**
 * Which edges of a sideways-scrolling strip (the top navigation on a phone) have more
 * beyond them: the hints shown there.
 * @param {{scrollLeft: number, scrollWidth: number, clientWidth: number}} box
 * @returns {{left: boolean, right: boolean}}
 */
export function navOverflow({scrollLeft, scrollWidth, clientWidth}) {
  const hidden = scrollWidth - clientWidth;
  if (hidden <= 1) return {left: false, right: false};
  return {left: scrollLeft > 1, right: scrollLeft < hidden - 1};
}
