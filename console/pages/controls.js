// @ts-check
// SPDX-License-Identifier: Apache-2.0
// Controls: the test controls of api.md "Operations" as buttons, shown only when the
// server was started with the flag that allows each (GET /v1/admin/controls): the manual
// clock (--clock manual), fault points (--enable-faults) and reset (--allow-reset).
import {del, get, post} from '../api.js';
import {badge, busy, button, clear, confirmDialog, el, formatTime, toast} from '../ui.js';

/** @param {HTMLElement} main */
export function renderControls(main) {
  let alive = true;
  const clockBox = el('div', {}, el('p.muted', 'Loading…'));
  const faultsBox = el('div');
  const resetBox = el('div');
  main.append(el('section.page', {},
                 el('div.page-head', {}, el('h1', 'Controls'),
                    el('p.muted.small', 'Test controls, each on only when the server was ' +
                                        'started with its flag.')),
                 el('div.two-columns', {},
                    el('section.card#clock-card', {}, el('h2', 'Clock'), clockBox),
                    el('section.card#reset-card', {}, el('h2', 'Reset'), resetBox)),
                 el('section.card#faults-card', {}, el('h2', 'Fault points'), faultsBox)));

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

  async function showFaults() {
    const {armed} = await get('/v1/admin/faults');
    const point = el('input.input#fault-point', {placeholder: 'snapshot.before_complete', autocomplete: 'off'});
    const kind = el('select.input#fault-kind', {},
                    ['error', 'crash', 'delay', 'duplicate', 'disk-full'].map((k) => el('option', {value: k}, k)));
    const count = el('input.input.input-narrow#fault-count', {type: 'number', value: 1, min: -1});
    const arm = el('button.btn.btn-primary', {type: 'submit'}, 'Arm');
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
                showFaults();
              }, 'small', {'aria-label': `Disarm ${f.point}`})))))))
            : el('p.muted', 'No fault point is armed.'),
          el('form.form-row#arm-fault', {
            onsubmit(/** @type {Event} */ event) {
              event.preventDefault();
              busy(arm, async () => {
                await post('/v1/admin/faults', {point: point.value.trim(), kind: kind.value,
                                                count: Number(count.value)});
                toast(`Armed ${point.value.trim()}`, 'success');
                await showFaults();
              });
            },
          },
          el('div.field', {}, el('label', {for: 'fault-point'}, 'Point'), point),
          el('div.field', {}, el('label', {for: 'fault-kind'}, 'Kind'), kind),
          el('div.field', {}, el('label', {for: 'fault-count', title: '-1: every hit'}, 'Count'), count),
          el('div.field.field-button', {}, arm)),
          armed.length ? button('Disarm all', async () => {
            await del('/v1/admin/faults');
            toast('Disarmed every fault point', 'success');
            showFaults();
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
      if (controls.faults) await showFaults();
      else {
        clear(faultsBox, el('p.muted', 'Off: start the server with --enable-faults to arm fault ' +
                                       'points from here (tests).'));
      }
    } catch (error) {
      clear(clockBox, el('div.notice.notice-error', error.message));
    }
  })();
  return () => { alive = false; };
}
