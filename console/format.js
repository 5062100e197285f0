// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Formatting values for display: sizes, counts, times, money, cell values with their
// number formats, and previews. Pure functions (no DOM), unit-tested with node --test
// (console/tests/unit).
import {displayValue} from './a1.js';

/**
 * @param {number|null|undefined} bytes
 * @returns {string} "1.5 KiB"; "—" for none
 */
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

/**
 * @param {number|null|undefined} n
 * @returns {string} "12,345"; "—" for none
 */
export function formatNumber(n) {
  if (n === null || n === undefined) return '—';
  return Number(n).toLocaleString('en-US');
}

/**
 * Unix seconds as "2026-01-01 12:00:00" in UTC (the server's clock may be manual).
 * @param {number|null|undefined} unixSeconds
 */
export function formatTime(unixSeconds) {
  if (unixSeconds === null || unixSeconds === undefined) return '—';
  return new Date(unixSeconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * Whether a table attribute holds a time: created, modified, expires, deleted, updated,
 * or a name ending in _at, _time, _micros or _us.
 * @param {string} name
 */
export function isTimeAttribute(name) {
  return /^(created|modified|expires|deleted|updated)$|_(at|time|micros|us)$/.test(name);
}

/**
 * A stored time in microseconds since 1970 and the fraction digits its unit has, from a
 * number of seconds (0 digits), milliseconds (3) or microseconds (6), told apart by size
 * (times from 1973 to 5138); null for anything else (not a number, 0, negative).
 * @param {unknown} value
 * @returns {{micros: number, digits: number}|null}
 */
export function storedTime(value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return null;
  if (value < 1e11) return {micros: value * 1e6, digits: 0};
  if (value < 1e14) return {micros: value * 1e3, digits: 3};
  if (value < 1e17) return {micros: value, digits: 6};
  return null;
}

/**
 * A stored time (storedTime) as ISO-like local date and time: "2026-01-01 13:00:00",
 * with the fraction a finer unit has when there is one (".250", ".000125"). '' when the
 * value is no time.
 * @param {unknown} value
 * @returns {string}
 */
export function formatStoredTime(value) {
  const time = storedTime(value);
  if (!time) return '';
  const whole = Math.floor(time.micros / 1e6);
  const date = new Date(whole * 1000);
  if (Number.isNaN(date.getTime())) return '';
  const pad = (/** @type {number} */ n, width = 2) => String(n).padStart(width, '0');
  let text = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
             `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  const fraction = Math.round(time.micros - whole * 1e6);
  if (time.digits && fraction) text += `.${pad(fraction, 6).slice(0, time.digits)}`;
  return text;
}

/**
 * US dollars in plain decimal notation: cents from a cent up, and three significant
 * digits below ("$0.000000114", never "$1.14e-7").
 * @param {number} usd
 */
export function formatUsd(usd) {
  if (usd === 0) return '$0';
  const sign = usd < 0 ? '-' : '';
  const abs = Math.abs(usd);
  if (abs >= 0.01) return `${sign}$${abs.toFixed(2)}`;
  const digits = Math.min(100, Math.ceil(-Math.log10(abs)) + 2);
  return `${sign}$${abs.toFixed(digits).replace(/0+$/, '')}`;
}

/**
 * A JSON value shortened for a table cell.
 * @param {unknown} value
 * @param {number} [max]
 */
export function preview(value, max = 120) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * A cell value under its number format, the common part of Excel's: decimals,
 * thousands separators, percentages, a leading "$", and ISO-like dates of a serial
 * number. Anything else shows the value.
 * @param {unknown} value
 * @param {string} [format]
 * @returns {string}
 */
export function formatCell(value, format) {
  if (typeof value !== 'number' || !format) return displayValue(value);
  const fmt = format.replace(/"[^"]*"|\\./g, '');
  if (/[ymd]/i.test(fmt) && !/0/.test(fmt)) {
    const date = new Date(Math.round((value - 25569) * 86400000));
    if (Number.isNaN(date.getTime())) return displayValue(value);
    const iso = date.toISOString();
    // A plain day format ("m/d/yyyy", "d.m.yyyy", "yyyy-mm-dd"): written as it says.
    if (/^(yyyy|yy|mm|m|dd|d)([-/. ])(mm|m|dd|d)\2(yyyy|yy|mm|m|dd|d)$/i.test(fmt)) {
      const parts = {y: date.getUTCFullYear(), m: date.getUTCMonth() + 1, d: date.getUTCDate()};
      return fmt.replace(/yyyy|yy|mm|m|dd|d/gi, (token) => {
        const unit = /** @type {'y'|'m'|'d'} */ (token[0].toLowerCase());
        const n = parts[unit];
        if (unit === 'y') return token.length === 2 ? String(n % 100).padStart(2, '0') : String(n);
        return token.length === 2 ? String(n).padStart(2, '0') : String(n);
      });
    }
    return /h/i.test(fmt) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso.slice(0, 10);
  }
  const decimals = (/\.(0+)/.exec(fmt) || ['', ''])[1].length;
  const percent = fmt.includes('%');
  const grouped = fmt.includes(',');
  const shown = percent ? value * 100 : value;
  let text = shown.toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
    useGrouping: grouped,
  });
  if (percent) text += '%';
  if (/^\$|\[\$\$/.test(fmt)) text = `$${text}`;
  return text;
}
