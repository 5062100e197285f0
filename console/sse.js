// @ts-check
// SPDX-License-Identifier: Apache-2.0
// The text/event-stream format (HTML's Server-Sent Events): fields up to a blank line
// make an event; lines starting with ':' are comments (the server's heartbeats). Fed
// text as it arrives, in pieces of any size.

/** @typedef {{type: string, id: string|null, data: string}} StreamEvent */

export class EventStreamParser {
  constructor() {
    this.buffer = '';
  }

  /**
   * Adds text and returns the events it completed, in order.
   * @param {string} text
   * @returns {StreamEvent[]}
   */
  feed(text) {
    this.buffer += text;
    // CRLF and CR end lines too; a CR at the very end may be the first half of a CRLF.
    const keepCr = this.buffer.endsWith('\r');
    let body = keepCr ? this.buffer.slice(0, -1) : this.buffer;
    body = body.replace(/\r\n?/g, '\n');
    /** @type {StreamEvent[]} */
    const events = [];
    let end;
    while ((end = body.indexOf('\n\n')) >= 0) {
      const block = body.slice(0, end);
      body = body.slice(end + 2);
      /** @type {StreamEvent} */
      const event = {type: 'message', id: null, data: ''};
      /** @type {string[]} */
      const data = [];
      let any = false;
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event.type = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id') event.id = value;
        else continue;
        any = true;
      }
      if (!any) continue;  // a comment-only block (heartbeat)
      event.data = data.join('\n');
      events.push(event);
    }
    this.buffer = body + (keepCr ? '\r' : '');
    return events;
  }
}
