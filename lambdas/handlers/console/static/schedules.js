// The schedules list (GET /schedules: all of the key's schedules, no pages): each with its expression,
// time zone, state, next firing and overlap policy, refreshed in place every few seconds.

import { call, describe, every } from './api.js';
import { el, replace, rerender, stateLine, table, time } from './dom.js';

const REFRESH_MS = 5000;

export const scheduleHref = (scheduleId) => `#/schedules/${encodeURIComponent(scheduleId)}`;

export function stateBadge(state) {
  const known = state === 'enabled' || state === 'paused' ? state : 'unknown';
  return el('span', { class: `status schedule-${known}` }, state);
}

function scheduleRow(schedule) {
  const next = schedule.nextFireTimes[0];
  return el(
    'tr',
    { 'data-schedule-id': schedule.scheduleId },
    el('td', {}, el('a', { class: 'break', href: scheduleHref(schedule.scheduleId), 'data-key': schedule.scheduleId }, schedule.name)),
    el('td', { class: 'mono' }, schedule.expression),
    el('td', { class: 'wide' }, schedule.timeZone),
    el('td', {}, stateBadge(schedule.state)),
    el('td', {}, next ? time(next) : el('span', { class: 'muted' }, schedule.state === 'paused' ? 'paused' : '—')),
    el('td', { class: 'wide' }, schedule.overlap),
  );
}

const HEADINGS = [['Name'], ['Expression'], ['Time zone', 'wide'], ['State'], ['Next firing'], ['Overlap', 'wide']];

export function schedulesView(main) {
  document.title = 'Schedules · offload console';
  const notice = el('div', { class: 'notice' });
  const body = el('div', {}, stateLine('loading', 'Loading schedules…'));
  replace(main, el('h1', {}, 'Schedules'), notice, body);

  let failed = false;
  const load = async () => {
    try {
      const page = await call('schedules');
      if (!page.schedules.length) rerender(body, stateLine('empty', 'No schedules yet: create one with POST /schedules.'));
      else rerender(body, table('Schedules', HEADINGS, page.schedules.map(scheduleRow)));
      if (failed) replace(notice);
      failed = false;
    } catch (error) {
      failed = true;
      replace(notice, stateLine('error', `Could not load schedules: ${describe(error)}`));
      replace(body);
    }
  };
  return every(REFRESH_MS, load);
}
