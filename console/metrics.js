// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Prometheus text exposition (GET /metrics) for the pipeline page's charts. Pure.

/** @typedef {{name: string, labels: Record<string, string>, value: number}} Sample */

/**
 * Parses Prometheus text: one sample per line, comments and blank lines skipped.
 * @param {string} text
 * @returns {Sample[]}
 */
export function parseMetrics(text) {
  /** @type {Sample[]} */
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    /** @type {Record<string, string>} */
    const labels = {};
    for (const pair of (match[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[pair[1]] = pair[2].replace(/\\(.)/g, (_, ch) => (ch === 'n' ? '\n' : ch));
    }
    samples.push({name: match[1], labels, value: Number(match[4])});
  }
  return samples;
}

/**
 * The sum of every sample named `name` whose labels pass `filter`.
 * @param {Sample[]} samples
 * @param {string} name
 * @param {(labels: Record<string, string>) => boolean} [filter]
 */
export function sumMetric(samples, name, filter = () => true) {
  return samples.filter((s) => s.name === name && filter(s.labels))
    .reduce((total, s) => total + s.value, 0);
}
