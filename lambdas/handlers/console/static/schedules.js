// The schedules list (GET /schedules, page after page: the key's schedules; the operator's key sees every
// client's): each with its owner, expression, time zone, state (failing ones first, flagged), next firing
// and overlap policy, refreshed in place every few seconds.

import { call, describe, every } from './api.js';
import { el, replace, rerender, stateLine, table, time } from './dom.js';

const REFRESH_MS = 5000;
const PAGE_SIZE = 50; // the API's largest page of schedules
const MAX_PAGES = 10; // a refresh costs at most this many requests of the key's quota

// The owner names the schedule for the operator's key (`?client=`); a client's own is named the same way.
export const scheduleHref = (schedule) =>
  `#/schedules/${encodeURIComponent(schedule.scheduleId)}?client=${encodeURIComponent(schedule.owner)}`;

export function stateBadge(schedule) {
  if (schedule.failing) return el('span', { class: 'status schedule-failing' }, `${schedule.state}, failing`);
  const known = schedule.state === 'enabled' || schedule.state === 'paused' ? schedule.state : 'unknown';
  return el('span', { class: `status schedule-${known}` }, schedule.state);
}

async function allSchedules() {
  const found = [];
  let cursor = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (cursor) query.set('cursor', cursor);
    const answer = await call(`schedules?${query}`);
    found.push(...answer.schedules);
    cursor = answer.nextCursor;
    if (!cursor) return { schedules: found, more: false };
  }
  return { schedules: found, more: true };
}

function scheduleRow(schedule) {
  const next = schedule.nextFireTimes[0];
  return el(
    'tr',
    { 'data-schedule-id': schedule.scheduleId },
    el('td', {}, el('a', { class: 'break', href: scheduleHref(schedule), 'data-key': schedule.scheduleId }, schedule.name)),
    el('td', { class: 'mono break' }, schedule.owner),
    el('td', { class: 'mono' }, schedule.expression),
    el('td', { class: 'wide' }, schedule.timeZone),
    el('td', { title: schedule.lastError || '' }, stateBadge(schedule)),
    el('td', {}, next ? time(next) : el('span', { class: 'muted' }, schedule.state === 'paused' ? 'paused' : '—')),
    el('td', { class: 'wide' }, schedule.overlap),
  );
}

const HEADINGS = [['Name'], ['Owner'], ['Expression'], ['Time zone', 'wide'], ['State'], ['Next firing'], ['Overlap', 'wide']];

export function schedulesView(main) {
  document.title = 'Schedules · offload console';
  const notice = el('div', { class: 'notice' });
  const body = el('div', {}, stateLine('loading', 'Loading schedules…'));
  replace(main, el('h1', {}, 'Schedules'), notice, body);

  let failed = false;
  const load = async () => {
    try {
      const { schedules, more } = await allSchedules();
      // Failing first (the API orders within a page only); otherwise as listed.
      const ordered = [...schedules.filter((s) => s.failing), ...schedules.filter((s) => !s.failing)];
      const rest = more ? [stateLine('empty', `The first ${schedules.length} schedules are shown.`)] : [];
      if (!schedules.length) rerender(body, stateLine('empty', 'No schedules yet: create one with POST /schedules.'));
      else rerender(body, table('Schedules', HEADINGS, ordered.map(scheduleRow)), ...rest);
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
