// The overview: counts per status and type, both queues, and jobs finished per minute (GET /stats);
// for the operator, each flow-control limit and its keys in use (GET /limits).

import { ApiError, call, describe, every } from './api.js';
import { finishedChart } from './chart.js';
import { STATES, el, formatAge, formatCount, formatNumber, replace, stateLine, table } from './dom.js';

const REFRESH_MS = 5000;

function statusCards(statuses) {
  return el(
    'ul',
    { class: 'cards', 'aria-label': 'Jobs by status' },
    STATES.map((state) =>
      el(
        'li',
        {},
        el(
          'a',
          { class: `card card-${state}`, href: `#/jobs?status=${state}`, 'data-status': state },
          el('span', { class: 'card-count' }, formatCount(statuses[state])),
          el('span', { class: 'card-label' }, state),
        ),
      ),
    ),
  );
}

function typeTable(types) {
  const names = Object.keys(types).sort();
  if (!names.length) return stateLine('empty', 'No jobs yet.');
  const rows = names.map((name) =>
    el(
      'tr',
      {},
      el('td', {}, el('a', { href: `#/jobs?type=${encodeURIComponent(name)}` }, name)),
      el('td', { class: 'number' }, formatCount(types[name])),
    ),
  );
  return table('Jobs by type', [['Type'], ['Jobs', 'number']], rows);
}

function fact(label, value) {
  return [el('dt', {}, label), el('dd', {}, value)];
}

// The queues' depths are the whole pipeline's: the API gives them to the operator key only (null else).
function queues(queue, deadLetters) {
  const depths = queue.visible == null ? [] : [
    fact('Main queue: ready', formatNumber(queue.visible)),
    fact('Main queue: running', formatNumber(queue.inFlight ?? 0)),
    fact('Main queue: delayed', formatNumber(queue.delayed ?? 0)),
  ];
  const dead = deadLetters == null ? [] : [fact('Dead-letter queue', formatNumber(deadLetters.visible ?? 0))];
  return el('dl', { class: 'facts' }, ...depths, fact('Oldest pending job', formatAge(queue.oldestPendingAgeSeconds)), ...dead);
}

function rule(limit) {
  const parts = [['concurrency', 'at once'], ['perSecond', '/s'], ['burst', 'burst']]
    .filter(([name]) => limit[name] != null)
    .map(([name, unit]) => `${limit[name]} ${unit}`);
  return `${parts.join(', ')}${limit.key ? ` per ${limit.key}` : ''}`;
}

// Every value is text (el sets textContent): keys name clients and hosts, never markup.
function limitsTable(limits) {
  if (!limits.length) return stateLine('empty', 'No job type is limited.');
  const rows = limits.flatMap((limit) => [
    el('tr', {}, el('th', { scope: 'row' }, limit.type), el('td', { colspan: '4' }, rule(limit))),
    ...limit.keys.map((key) =>
      el(
        'tr',
        {},
        el('td', {}, key.key),
        el('td', { class: 'number' }, formatNumber(key.running)),
        el('td', { class: 'number' }, key.tokens == null ? '–' : String(key.tokens)),
        el('td', {}, key.pausedUntil ? `paused until ${key.pausedUntil}` : ''),
        el('td', { class: 'number' }, formatNumber(key.waiting)),
      ),
    ),
  ]);
  return table('Limits', [['Type / key'], ['Running', 'number'], ['Tokens', 'number'], ['Pause'], ['Waiting', 'number']], rows);
}

// The operator's key only, so it is asked only when the stats say the key is the operator's (the
// dead-letter queue is shown to the operator alone): a client's overview never calls it and never logs
// its 403. A failure leaves the section out rather than the whole overview (the next refresh tries again).
// Page after page (100 keys each, at most LIMIT_PAGES): a type whose keys go on over a page is one entry.
const LIMIT_PAGES = 20;
async function limitsOf(stats) {
  if (stats.deadLetterQueue == null) return null;
  try {
    const limits = [];
    let cursor;
    for (let page = 0; page < LIMIT_PAGES; page += 1) {
      const body = await call('limits', { query: { limit: 100, cursor } });
      for (const limit of body.limits) {
        const last = limits[limits.length - 1];
        if (last && last.type === limit.type) last.keys.push(...limit.keys);
        else limits.push(limit);
      }
      cursor = body.nextCursor;
      if (!cursor) break;
    }
    return limits;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 403)) console.warn('GET /limits failed', error);
    return null;
  }
}

const anyMore = (stats) =>
  [stats.statuses, stats.types].some((tallies) => Object.values(tallies || {}).some((tally) => tally.more));

function render(body, stats, limits) {
  replace(
    body,
    el('section', { 'aria-labelledby': 'by-status' }, el('h2', { id: 'by-status' }, 'Jobs by status'), statusCards(stats.statuses || {})),
    anyMore(stats) ? el('p', { class: 'muted' }, 'A count shown with + is where the API stopped counting: at least that many.') : null,
    el(
      'div',
      { class: 'columns' },
      el('section', { 'aria-labelledby': 'by-type' }, el('h2', { id: 'by-type' }, 'Jobs by type'), typeTable(stats.types || {})),
      el('section', { 'aria-labelledby': 'queues' }, el('h2', { id: 'queues' }, 'Queues'), queues(stats.queue || {}, stats.deadLetterQueue)),
    ),
    el(
      'section',
      { 'aria-labelledby': 'finished' },
      el('h2', { id: 'finished' }, 'Finished per minute, last hour'),
      finishedChart(stats.finishedPerMinute),
      stats.more ? el('p', { class: 'muted' }, 'More jobs finished than the API counted: the chart shows the first it found.') : null,
    ),
    limits == null ? null : el('section', { 'aria-labelledby': 'limits' }, el('h2', { id: 'limits' }, 'Limits'), limitsTable(limits)),
  );
}

export function overviewView(main) {
  document.title = 'Overview · offload console';
  const notice = el('div', { class: 'notice' });
  const body = el('div', { 'aria-live': 'off' }, stateLine('loading', 'Loading the overview…'));
  replace(main, el('h1', {}, 'Overview'), notice, body);
  let loaded = false;
  return every(REFRESH_MS, async () => {
    try {
      const stats = await call('stats');
      const limits = await limitsOf(stats);
      render(body, stats, limits);
      loaded = true;
      replace(notice);
    } catch (error) {
      replace(notice, stateLine('error', `Could not load the overview: ${describe(error)}`));
      if (!loaded) replace(body);
    }
  });
}
