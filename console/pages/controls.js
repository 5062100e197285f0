// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Controls: the test controls of api.md "Operations" as buttons, shown only when the
// server was started with the flag that allows each (GET /v1/admin/controls): the manual
// clock (--clock manual), fault points (--enable-faults) and reset (--allow-reset).
// A fault point is chosen from the points the server knows, never typed: the `points`
// GET /v1/admin/controls lists.
import {del, get, post} from '../api.js';
import {badge, busy, button, clear, confirmDialog, el, formatTime, toast} from '../ui.js';
import {renderHealthPanel} from './health_panel.js';

/**
 * The fault points a server knows, from an answer of its that lists them: a `points`
 * array (of names, or of {name} / {point}), or the message refusing an unknown point
 * ("unknown fault point 'x' (known points: a, b, c)"). [] when it lists none.
 * @param {any} answer a JSON body, or an error message
 * @returns {string[]}
 */
export function knownFaultPoints(answer) {
  if (answer && typeof answer === 'object' && Array.isArray(answer.points)) {
    return answer.points.map((/** @type {any} */ p) => (typeof p === 'string' ? p : p?.name ?? p?.point))
      .filter((/** @type {any} */ p) => typeof p === 'string' && p !== '');
  }
  const text = typeof answer === 'string' ? answer : answer?.error?.message ?? '';
  const match = /known points: ([^)]*)\)/.exec(text);
  if (!match) return [];
  return match[1].split(',').map((p) => p.trim()).filter(Boolean);
}

/**
 * The server's fault points.
 * @param {any} controls GET /v1/admin/controls
 * @param {any} faults GET /v1/admin/faults
 * @returns {Promise<string[]>}
 */
async function loadFaultPoints(controls, faults) {
  for (const answer of [controls, faults]) {
    const points = knownFaultPoints(answer);
    if (points.length) return points;
  }
  return [];
}

/** @param {HTMLElement} main */
export function renderControls(main) {
  let alive = true;
  const clockBox = el('div', {}, el('p.muted', 'Loading…'));
  // GET /v1/health: not a test control, but what an operator looks at beside them.
  const healthHead = el('div.card-head', {}, el('h2', 'Health'));
  const healthBox = el('div');
  const faultsBox = el('div');
  const resetBox = el('div');
  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Controls'),
                    el('p.muted.small', 'Test controls, each on only when the server was ' +
                                        'started with its flag.')),
                 el('div.two-columns', {},
                    el('section.card#clock-card', {}, el('h2', 'Clock'), clockBox),
                    el('section.card#reset-card', {}, el('h2', 'Reset'), resetBox)),
                 el('section.card#faults-card', {}, el('h2', 'Fault points'), faultsBox),
                 el('section.card#health-card', {}, healthHead, healthBox)));
  const stopHealth = renderHealthPanel(healthHead, healthBox);

  /** @param {any} controls */
  function showClock(controls) {
    const clock = controls.clock;
    const seconds = el('input.input.input-narrow#advance-seconds', {type: 'number', min: 0, value: 60});
    const advance = el('button.btn', {type: 'submit'}, 'Advance');
    clear(clockBox,
          el('p', {}, el('strong#clock-now', formatTime(clock.now)), ' UTC ',
             clock.manual ? badge('manual', 'warning') : badge('system', 'muted')),
          clock.manual
            ? el('form.form-row', {
              onsubmit(/** @type {Event} */ event) {
                event.preventDefault();
                busy(advance, async () => {
                  const now = await post('/v1/admin/clock', {advance_s: Number(seconds.value)});
                  toast(`The clock is at ${formatTime(now.now)}`, 'success');
                  showClock({...controls, clock: now});
                });
              },
            }, el('div.field', {}, el('label', {for: 'advance-seconds'}, 'Seconds'), seconds),
            el('div.field.field-button', {}, advance))
            : el('p.muted', 'The system clock: start the server with --clock manual to move time ' +
                            'by hand (tests).'));
  }

  /** @type {string[]|null} the server's points, read once */
  let points = null;

  /** @param {any} controls */
  async function showFaults(controls) {
    const faults = await get('/v1/admin/faults');
    const {armed} = faults;
    if (!points || points.length === 0) points = await loadFaultPoints(controls, faults);
    if (!alive) return;
    const point = el('select.input#fault-point', {required: true},
                     el('option', {value: ''}, 'Choose a point…'),
                     points.map((p) => el('option', {value: p}, p)));
    const kind = el('select.input#fault-kind', {},
                    ['error', 'crash', 'delay', 'duplicate', 'disk-full'].map((k) => el('option', {value: k}, k)));
    const count = el('input.input.input-narrow#fault-count', {type: 'number', value: 1, min: -1});
    const arm = el('button.btn.btn-primary', {type: 'submit', disabled: points.length === 0}, 'Arm');
    clear(faultsBox,
          armed.length ? el('div.table-wrap', {}, el('table.table#faults-table', {},
            el('thead', {}, el('tr', {}, ['Point', 'Kind', 'Remaining', 'Fired'].map((h) => el('th', h)),
                               el('th', {'aria-label': 'Actions'}))),
            el('tbody', {}, armed.map((/** @type {any} */ f) => el('tr', {dataset: {point: f.point}},
              el('td', {}, el('code', f.point)), el('td', f.kind),
              el('td', f.remaining === -1 ? 'every hit' : String(f.remaining)), el('td', String(f.fired)),
              el('td.actions', {}, button('Disarm', async () => {
                await del(`/v1/admin/faults?point=${encodeURIComponent(f.point)}`);
                toast(`Disarmed ${f.point}`, 'success');
                showFaults(controls);
              }, 'small', {'aria-label': `Disarm ${f.point}`})))))))
            : el('p.muted', 'No fault point is armed.'),
          el('form.form-row#arm-fault', {
            onsubmit(/** @type {Event} */ event) {
              event.preventDefault();
              busy(arm, async () => {
                await post('/v1/admin/faults', {point: point.value, kind: kind.value,
                                                count: Number(count.value)});
                toast(`Armed ${point.value}`, 'success');
                await showFaults(controls);
              });
            },
          },
          el('div.field', {}, el('label', {for: 'fault-point'}, 'Point'), point),
          el('div.field', {}, el('label', {for: 'fault-kind'}, 'Kind'), kind),
          el('div.field', {}, el('label', {for: 'fault-count', title: '-1: every hit'}, 'Count'), count),
          el('div.field.field-button', {}, arm)),
          points.length ? null : el('p.notice.notice-warning', 'The server named no fault points: ' +
                                    'none can be armed from here.'),
          armed.length ? button('Disarm all', async () => {
            await del('/v1/admin/faults');
            toast('Disarmed every fault point', 'success');
            showFaults(controls);
          }, 'small') : null);
  }

  /** @param {any} controls */
  function showReset(controls) {
    if (!controls.reset) {
      clear(resetBox, el('p.muted', 'Off: start the server with --allow-reset to drop every sheet ' +
                                    'and blob from here (tests).'));
      return;
    }
    const resetButton = button('Reset the server…', () => busy(resetButton, async () => {
      const ok = await confirmDialog('Reset the server?',
                                     'Every sheet with its entries, and every blob, is dropped. ' +
                                     'This cannot be undone.', 'Reset');
      if (!ok) return;
      const report = await post('/v1/admin/reset', {});
      toast(`Reset: ${report.sheets} sheets and ${report.blobs} blobs dropped`, 'success');
    }), 'danger', {id: 'reset-button'});
    clear(resetBox, el('p', 'Drops every sheet and blob.'), resetButton);
  }

  (async () => {
    try {
      const controls = await get('/v1/admin/controls');
      if (!alive) return;
      showClock(controls);
      showReset(controls);
      if (controls.faults) await showFaults(controls);
      else {
        clear(faultsBox, el('p.muted', 'Off: start the server with --enable-faults to arm fault ' +
                                       'points from here (tests).'));
      }
    } catch (error) {
      clear(clockBox, el('div.notice.notice-error', error.message));
    }
  })();
  return () => {
    alive = false;
    stopHealth();
  };
}
