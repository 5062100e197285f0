// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Which Snapshot entries sit in the snapshot queue's dead-letter queue: the pending
// snapshot of such an entry may still say "active" (its last worker died holding it),
// but nothing will build it until it is redriven, so the pages show it as
// dead-lettered, not building.
import {get} from './api.js';

const SNAPSHOT_QUEUE = 'snapshots';

/**
 * "sheet/segment/entry" of a snapshot job message body, or null if it is not one.
 * @param {string} body
 * @returns {string|null}
 */
export function snapshotJobKey(body) {
  try {
    const job = JSON.parse(body);
    if (typeof job.sheet !== 'string' || !Number.isInteger(job.segment) ||
        !Number.isInteger(job.entry)) {
      return null;
    }
    return `${job.sheet}/${job.segment}/${job.entry}`;
  } catch {
    return null;
  }
}

/**
 * The keys ("sheet/segment/entry") of dead-lettered snapshot jobs, and the dead-letter
 * messages by key. An empty map when there are none (or the admin routes answer no).
 * @returns {Promise<Map<string, {id: string, last_error: string}>>}
 */
export async function deadLetteredSnapshots() {
  /** @type {Map<string, {id: string, last_error: string}>} */
  const out = new Map();
  try {
    const {queues} = await get('/v1/admin/queues');
    const queue = queues.find((/** @type {any} */ q) => q.name === SNAPSHOT_QUEUE);
    if (!queue || !queue.dead_letter_depth) return out;
    const {messages} = await get(`/v1/admin/queues/${SNAPSHOT_QUEUE}/dead-letters?limit=1000`);
    for (const m of messages) {
      const key = snapshotJobKey(m.body);
      if (key) out.set(key, {id: m.id, last_error: m.last_error});
    }
  } catch {
    // not allowed or unreachable: the states stay as the sheet reports them
  }
  return out;
}
