// One schedule: its state and next firings, its fields and job, the jobs of its last firings (each a
// link to its job page), and Pause/Resume, Run now and Delete (which asks first). Refreshed in place.

import { ApiError, call, describe, every, schedulePath } from './api.js';
import { act, perform } from './buttons.js';
import { el, rerender, replace, stateLine, statusBadge, table, time } from './dom.js';
import { stateBadge } from './schedules.js';

const REFRESH_MS = 3000;

const jobLink = (jobId) => el('a', { class: 'mono', href: `#/jobs/${encodeURIComponent(jobId)}` }, jobId);
const fact = (label, ...value) => [el('dt', {}, label), el('dd', {}, ...value)];

const OVERLAP = {
  allow: 'allow: every firing creates a job',
  skip: 'skip: no job while the previous one is not finished',
};

function why(schedule) {
  if (schedule.failing) return ['Failing since ', time(schedule.lastErrorAt), ': ', schedule.lastError];
  if (schedule.state === 'paused') return 'Paused: it fires only when you run it now.';
  const next = schedule.nextFireTimes[0];
  return next ? ['Enabled: it fires next ', time(next), '.'] : 'Enabled, with no firing ahead.';
}

function facts(schedule) {
  return el(
    'dl',
    { class: 'facts' },
    fact('Owner', el('span', { class: 'mono' }, schedule.owner)),
    fact('Expression', el('span', { class: 'mono' }, schedule.expression)),
    fact('Time zone', schedule.timeZone),
    fact('Overlap', OVERLAP[schedule.overlap] || schedule.overlap),
    fact('Job type', schedule.job.type),
    fact('Max attempts', schedule.job.maxAttempts),
    fact('Priority', schedule.job.priority),
    fact('Created', time(schedule.createdAt, { exact: true })),
    fact('Id', el('span', { class: 'mono' }, schedule.scheduleId)),
  );
}

function nextTimes(schedule) {
  if (!schedule.nextFireTimes.length) return stateLine('empty', schedule.state === 'paused' ? 'None while paused.' : 'None ahead.');
  return el('ol', {}, schedule.nextFireTimes.map((at) => el('li', {}, time(at, { exact: true }))));
}

function lastJobs(schedule) {
  if (!schedule.lastJobs.length) return stateLine('empty', 'No firings yet.');
  const rows = schedule.lastJobs.map((firing) =>
    el(
      'tr',
      {},
      el('td', {}, jobLink(firing.jobId)),
      el('td', {}, time(firing.scheduledFor)),
      el('td', {}, firing.status ? statusBadge(firing.status) : el('span', { class: 'muted' }, 'expired')),
    ),
  );
  return table('Jobs of its last firings, newest first', [['Job'], ['Firing for'], ['Status']], rows);
}

// The schedule's path named by its owner, so the operator's key reaches any client's.
const ownedPath = (schedule, ...rest) => `${schedulePath(schedule.scheduleId, ...rest)}?client=${encodeURIComponent(schedule.owner)}`;

function buttons(schedule, notice, refresh, deleted) {
  const path = ownedPath(schedule);
  const paused = schedule.state === 'paused';
  const toggle = el('button', { type: 'button', 'data-key': 'toggle' }, paused ? 'Resume' : 'Pause');
  toggle.addEventListener('click', () =>
    perform(toggle, notice, paused ? 'Resume' : 'Pause', () => call(path, { method: 'PATCH', body: { state: paused ? 'enabled' : 'paused' } }), (answer) => {
      replace(notice, stateLine('ok', `The schedule is ${answer.state}.`));
      refresh();
    }),
  );
  const run = el('button', { type: 'button', class: 'primary', 'data-key': 'run' }, 'Run now');
  run.addEventListener('click', () =>
    perform(run, notice, 'Run now', () => call(ownedPath(schedule, 'run'), { method: 'POST' }), (answer) => {
      replace(notice, el('p', { class: 'state ok', role: 'status' }, 'Run now: job ', jobLink(answer.jobId), ` is ${answer.status}.`));
      refresh();
    }),
  );
  const remove = el('button', { type: 'button', class: 'danger', 'data-key': 'delete' }, 'Delete');
  const question = {
    title: 'Delete this schedule?',
    text: 'It fires no more; the jobs it created stay. This cannot be undone.',
    confirm: 'Delete schedule',
  };
  remove.addEventListener('click', () => act(remove, notice, question, () => call(path, { method: 'DELETE' }), deleted));
  return [toggle, run, remove];
}

function details(schedule, notice, refresh, deleted) {
  return [
    el('div', { class: 'summary' }, stateBadge(schedule), el('p', {}, why(schedule)), el('div', { class: 'actions' }, buttons(schedule, notice, refresh, deleted))),
    facts(schedule),
    el('section', {}, el('h2', {}, 'Next firings'), nextTimes(schedule)),
    el('section', {}, el('h2', {}, 'Its last jobs'), lastJobs(schedule)),
    el('section', {}, el('h2', {}, 'Payload of its jobs'), el('pre', { class: 'json', tabindex: '0' }, JSON.stringify(schedule.job.payload, null, 2))),
  ];
}

export function scheduleView(main, scheduleId, client) {
  document.title = 'Schedule · offload console';
  const notice = el('div', { class: 'notice' });
  const problem = el('div', { class: 'notice' });
  const title = el('span', { class: 'break' });
  const body = el('div', {}, stateLine('loading', 'Loading the schedule…'));
  const back = el('p', {}, el('a', { href: '#/schedules' }, '← All schedules'));
  replace(main, back, el('h1', {}, 'Schedule ', title), notice, problem, body);
  let seen = null;
  let gone = false;

  const deleted = (answer) => {
    gone = true;
    poller.stop();
    replace(notice, stateLine('ok', `Deleted: ${answer.name} fires no more; the jobs it created stay.`));
    replace(body);
  };
  const load = async () => {
    try {
      const named = client ? `?client=${encodeURIComponent(client)}` : '';
      const schedule = await call(`${schedulePath(scheduleId)}${named}`);
      if (gone) return;
      const current = JSON.stringify(schedule);
      if (current !== seen) {
        seen = current;
        document.title = `Schedule ${schedule.name} · offload console`;
        replace(title, schedule.name);
        rerender(body, details(schedule, notice, () => poller.now(), deleted));
      }
      replace(problem);
    } catch (error) {
      if (gone) return;
      const missing = error instanceof ApiError && error.status === 404;
      const text = missing ? `No such schedule for this API key (${describe(error)}).` : `Could not load the schedule: ${describe(error)}`;
      replace(problem, stateLine('error', text));
      if (seen === null) replace(body);
    }
  };
  const poller = every(REFRESH_MS, load);
  return poller;
}
