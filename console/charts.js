// @ts-check
// SPDX-License-Identifier: Apache-2.0
// A small live line chart on a <canvas>: the last `capacity` samples of one series,
// scaled to its own maximum. Enough for "appends/s", "queue depth" and "feed lag".
import {el} from './ui.js';

export class Sparkline {
  /**
   * @param {string} title
   * @param {{unit?: string, capacity?: number, color?: string}} [options]
   */
  constructor(title, {unit = '', capacity = 60, color = '#2563eb'} = {}) {
    this.unit = unit;
    this.capacity = capacity;
    this.color = color;
    /** @type {number[]} */
    this.samples = [];
    this.valueNode = el('span.chart-value', '—');
    this.canvas = el('canvas.chart-canvas', {width: 320, height: 72, role: 'img',
                                             'aria-label': title});
    this.node = el('figure.chart', {},
                   el('figcaption.chart-caption', {}, el('span', title), this.valueNode),
                   this.canvas);
  }

  /** @param {number} value */
  push(value) {
    this.samples.push(value);
    if (this.samples.length > this.capacity) this.samples.shift();
    const shown = Number.isInteger(value) ? value : value.toFixed(1);
    this.valueNode.textContent = `${shown}${this.unit}`;
    this.draw();
  }

  draw() {
    const ratio = window.devicePixelRatio || 1;
    const width = this.canvas.clientWidth || 320;
    const height = this.canvas.clientHeight || 72;
    if (this.canvas.width !== width * ratio) {
      this.canvas.width = width * ratio;
      this.canvas.height = height * ratio;
    }
    const ctx = /** @type {CanvasRenderingContext2D} */ (this.canvas.getContext('2d'));
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const max = Math.max(1, ...this.samples);
    const step = width / Math.max(1, this.capacity - 1);
    const x0 = width - (this.samples.length - 1) * step;
    const y = (v) => height - 4 - (v / max) * (height - 10);
    ctx.strokeStyle = '#e5e7eb';
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(0, height - 3.5);
    ctx.lineTo(width, height - 3.5);
    ctx.stroke();
    if (this.samples.length === 0) return;
    ctx.beginPath();
    this.samples.forEach((v, i) => {
      if (i === 0) ctx.moveTo(x0, y(v));
      else ctx.lineTo(x0 + i * step, y(v));
    });
    ctx.strokeStyle = this.color;
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx.lineTo(x0 + (this.samples.length - 1) * step, height - 4);
    ctx.lineTo(x0, height - 4);
    ctx.closePath();
    ctx.fillStyle = `${this.color}1f`;
    ctx.fill();
  }
}
