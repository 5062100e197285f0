// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The console's only way to the server: the public HTTP API of api.md, as any client
// would use it. When the server has a token, the first 401 asks for it once (kept in
// sessionStorage for this tab) and the request is retried; a later 401 asks again.
import {el, modal} from './ui.js';

const TOKEN_KEY = 'sheetlog.token';

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {any} body
   */
  constructor(status, body) {
    const error = body && body.error ? body.error : {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `HTTP${status}`;
    this.details = error;
  }
}

/** @type {Promise<void>|null} */
let tokenPrompt = null;  // one prompt at a time, shared by every request that got a 401

function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

// Asks for the token; resolves when one was entered (never resolves a cancel: nothing
// works without it, so the dialog is shown again).
/**
 * @param {boolean} wrong
 * @returns {Promise<void>}
 */
function askForToken(wrong) {
  if (tokenPrompt) return tokenPrompt;
  tokenPrompt = (async () => {
    for (;;) {
      const input = el('input.input#token-input', {
        type: 'password',
        name: 'token',
        autocomplete: 'current-password',
        'aria-label': 'Token',
        placeholder: 'Token',
        required: true,
      });
      const answer = await modal({
        title: 'This server needs a token',
        body: el('div', {},
                 el('p', wrong ? 'The token was not accepted. Enter it again.'
                               : 'Enter the token the server was started with ' +
                                 '(--token or SHEETLOG_TOKEN). It is kept for this tab only.'),
                 input),
        actions: [{label: 'Sign in', value: 'ok', kind: 'primary'}],
        initialFocus: '#token-input',
      });
      if (answer === 'ok' && input.value) {
        sessionStorage.setItem(TOKEN_KEY, input.value);
        return;
      }
    }
  })().finally(() => { tokenPrompt = null; });
  return tokenPrompt;
}

/** @returns {Record<string, string>} */
export function authHeaders() {
  const token = storedToken();
  return token ? {Authorization: `Bearer ${token}`} : {};
}

/**
 * @typedef {{body?: any, headers?: Record<string, string>, signal?: AbortSignal}} RequestOptions
 */

/**
 * fetch() with the token; retries after asking for it on 401. Returns the Response.
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<Response>}
 */
export async function rawRequest(method, path, {body, headers = {}, signal} = {}) {
  for (let attempt = 0; ; attempt++) {
    /** @type {RequestInit & {headers: Record<string, string>}} */
    const init = {method, headers: {...authHeaders(), ...headers}, signal};
    if (body !== undefined) {
      if (body instanceof Blob || typeof body === 'string') {
        init.body = body;
      } else {
        init.body = JSON.stringify(body);
        init.headers['Content-Type'] = 'application/json';
      }
    }
    const response = await fetch(path, init);
    if (response.status !== 401 || attempt > 5) return response;
    await askForToken(Boolean(storedToken()));
  }
}

/**
 * A JSON request: resolves with the parsed body (null for 204), throws ApiError.
 * @param {string} method
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<any>}
 */
export async function request(method, path, options = {}) {
  const response = await rawRequest(method, path, options);
  const text = await response.text();
  let parsed = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

/** @type {(path: string, options?: RequestOptions) => Promise<any>} */
export const get = (path, options) => request('GET', path, options);
/** @type {(path: string, body?: any, options?: RequestOptions) => Promise<any>} */
export const post = (path, body, options = {}) => request('POST', path, {...options, body});
/** @type {(path: string, body?: any, options?: RequestOptions) => Promise<any>} */
export const put = (path, body, options = {}) => request('PUT', path, {...options, body});
/** @type {(path: string, body?: any, options?: RequestOptions) => Promise<any>} */
export const patch = (path, body, options = {}) => request('PATCH', path, {...options, body});
/** @type {(path: string, options?: RequestOptions) => Promise<any>} */
export const del = (path, options) => request('DELETE', path, options);

/**
 * @param {string} id
 * @param {string} [rest]
 */
export function sheetPath(id, rest = '') {
  return `/v1/sheets/${encodeURIComponent(id)}${rest}`;
}

/**
 * Query string from an object, skipping null/undefined/'' values.
 * @param {Record<string, any>} params
 */
export function query(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== '') search.set(k, String(v));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * Downloads `path` (with the token) as a file named `filename`. `onProgress(loaded,
 * total|null)` is called while it arrives.
 * @param {string} path
 * @param {string} filename
 * @param {(loaded: number, total: number|null) => void} [onProgress]
 */
export async function download(path, filename, onProgress) {
  const response = await rawRequest('GET', path);
  if (!response.ok) {
    let body = null;
    try {
      body = await response.json();
    } catch { /* not JSON */ }
    throw new ApiError(response.status, body);
  }
  const total = Number(response.headers.get('Content-Length')) || null;
  if (!response.body) throw new Error('the response has no body');
  const reader = response.body.getReader();
  const parts = [];
  let loaded = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    parts.push(value);
    loaded += value.length;
    if (onProgress) onProgress(loaded, total);
  }
  const blob = new Blob(parts, {type: response.headers.get('Content-Type') || ''});
  const url = URL.createObjectURL(blob);
  const link = el('a', {href: url, download: filename});
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return {bytes: loaded};
}

/**
 * PUTs `file` to a URL with upload progress (XMLHttpRequest: fetch has none). With
 * `token`, sends the bearer token (a blob PUT by key; a presigned URL needs none).
 * @param {string} url
 * @param {Blob} file
 * @param {string} contentType
 * @param {(loaded: number, total: number) => void} onProgress
 * @param {{token?: boolean}} [options]
 * @returns {Promise<void>}
 */
export function putWithProgress(url, file, contentType, onProgress, {token = false} = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    if (contentType) xhr.setRequestHeader('Content-Type', contentType);
    if (token) {
      for (const [name, value] of Object.entries(authHeaders())) xhr.setRequestHeader(name, value);
    }
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(file.size, file.size);
        resolve();
      } else {
        let body = null;
        try {
          body = JSON.parse(xhr.responseText);
        } catch { /* not JSON */ }
        reject(new ApiError(xhr.status, body));
      }
    });
    xhr.addEventListener('error', () => reject(new Error('upload failed (network error)')));
    xhr.send(file);
  });
}
