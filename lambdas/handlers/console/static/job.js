// One job: its state and why, the actions its state allows, payload, result, attempts, a workflow's
// steps as a timeline, and for a fan-out its children and their deliveries. Refreshed in place every few seconds.

import { ApiError, call, describe, every, jobPath } from './api.js';
import { allowedActions, cancelButton, retryButton } from './buttons.js';
import { el, rerender, replace, stateLine, statusBadge, table, time } from './dom.js';
import { pagedSection } from './paged.js';

// Fast while the job can still change by itself, slow once it is finished.
const REFRESH_MS = 3000;
const FINISHED_REFRESH_MS = 15000;
const FINISHED = ['done', 'dead', 'cancelled'];
const PAGE_SIZE = 25;
const EXCERPT = 200;

const jobLink = (jobId) => el('a', { class: 'mono', href: `#/jobs/${encodeURIComponent(jobId)}` }, jobId);
const json = (value) => el('pre', { class: 'json', tabindex: '0' }, JSON.stringify(value, null, 2));
const excerpt = (text) => (text && text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text || '');

function why(job) {
  switch (job.status) {
    case 'dead':
      return 'This job is dead: it will not run again unless you retry it. Its last error says why.';
    case 'pending':
      return job.nextAttemptAt ? ['Waiting to run; next attempt ', time(job.nextAttemptAt), '.'] : 'Waiting to run.';
    case 'scheduled':
      return ['Scheduled: it starts at ', time(job.runAt), '.'];
    case 'processing':
      return job.steps ? 'A workflow running a step now.' : 'A worker is running it now.';
    case 'waiting':
      return job.steps ? workflowWait(job.waitingFor) : 'A fan-out waiting for its deliveries to finish.';
    case 'cancelled':
      return 'Cancelled: it will not run.';
    default:
      return null;
  }
}

// A workflow sleeps (`flow.sleep`) or waits for an event (`flow.wait_for_event`) until a time.
function workflowWait(waiting) {
  if (!waiting) return 'A workflow waiting.';
  if (waiting.limit === 'event') {
    return ['A workflow waiting for the event ', el('code', {}, waiting.key), ' until ', time(waiting.retryAt), '.'];
  }
  return ['A workflow sleeping (', el('code', {}, waiting.key), ') until ', time(waiting.retryAt), '.'];
}

function fact(label, ...value) {
  return [el('dt', {}, label), el('dd', {}, ...value)];
}

// The history numbers attempts across retries, `attempts` counts them since the last retry: once a job
// has been retried, say both, in the history's numbering first.
function attemptsText(job) {
  const history = job.history || [];
  const latest = history.length ? history[history.length - 1].attempt : job.attempts;
  const since = `${job.attempts} of ${job.maxAttempts}`;
  return latest > job.attempts ? `#${latest} in all; ${since} since the last retry` : since;
}

// A fan-out is done when every delivery has finished, failed or not: say how many failed.
function badge(job) {
  const failed = job.children ? job.children.failed : 0;
  if (job.status !== 'done' || !failed) return statusBadge(job.status);
  return el('span', { class: 'status status-partial' }, `done, ${failed} of ${job.children.total} deliveries failed`);
}

function facts(job) {
  const children = job.children;
  return el(
    'dl',
    { class: 'facts' },
    fact('Type', job.type),
    fact('Attempts', attemptsText(job)),
    fact('Priority', job.priority),
    fact('Created', time(job.createdAt, { exact: true })),
    fact('In this status since', time(job.statusAt || job.updatedAt, { exact: true })),
    fact('Updated', time(job.updatedAt, { exact: true })),
    job.parentId ? fact('Parent', jobLink(job.parentId)) : null,
    children
      ? fact('Children', `${children.total} in all: ${children.pending} pending, ${children.delivered} done, ${children.failed} dead, ${children.cancelled ?? 0} cancelled`)
      : null,
  );
}

function safeLink(url, label) {
  let parsed = null;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: shown as text.
  }
  const usable = parsed && (parsed.protocol === 'https:' || parsed.protocol === 'http:');
  return usable ? el('a', { href: parsed.href, rel: 'noopener noreferrer' }, label) : el('span', {}, label);
}

function historyTable(history) {
  if (!history || !history.length) return stateLine('empty', 'No attempts yet.');
  const rows = history.map((entry) =>
    el(
      'tr',
      {},
      el('td', { class: 'number' }, entry.attempt),
      el('td', {}, time(entry.startedAt)),
      el('td', {}, time(entry.endedAt)),
      el('td', {}, entry.outcome || 'running'),
      el('td', { class: 'error-text' }, entry.error || ''),
    ),
  );
  return table('Attempts, oldest first', [['#', 'number'], ['Started'], ['Ended'], ['Outcome'], ['Error']], rows);
}

// A workflow's steps in the order they started: a timeline, each with its attempts and last error.
function stepsTimeline(steps) {
  if (!steps.length) return stateLine('empty', 'No step has started yet.');
  const rows = steps.map((step) =>
    el(
      'tr',
      {},
      el('td', {}, step.name),
      el('td', {}, step.status),
      el('td', {}, time(step.startedAt)),
      el('td', {}, step.endedAt ? time(step.endedAt) : ''),
      el('td', { class: 'number' }, step.attempts),
      el('td', { class: 'error-text' }, step.error || ''),
    ),
  );
  return table('Steps, in the order they started', [['Step'], ['Status'], ['Started'], ['Ended'], ['Attempts', 'number'], ['Error']], rows);
}

function details(job, notice, refresh) {
  const allowed = allowedActions(job);
  const actions = [
    allowed.retry ? retryButton(job, notice, refresh) : null,
    allowed.cancel ? cancelButton(job, notice, refresh) : null,
  ].filter(Boolean);
  actions.forEach((button, index) => button.setAttribute('data-key', `action-${index}`));
  return [
    el('div', { class: 'summary' }, badge(job), el('p', {}, why(job)), el('div', { class: 'actions' }, actions)),
    job.lastError ? el('section', {}, el('h2', {}, 'Last error'), el('pre', { class: 'error-text' }, job.lastError)) : null,
    facts(job),
    el('section', {}, el('h2', {}, 'Payload'), 'payload' in job ? json(job.payload) : stateLine('empty', 'The API did not send the payload.')),
    job.result !== null && job.result !== undefined ? el('section', {}, el('h2', {}, 'Result'), json(job.result)) : null,
    job.downloads && job.downloads.length
      ? el('section', {}, el('h2', {}, 'Files'), el('ul', {}, job.downloads.map((d) => el('li', {}, safeLink(d.url, d.key), ' (link expires ', time(d.expiresAt), ')'))))
      : null,
    job.steps ? el('section', {}, el('h2', {}, 'Steps'), stepsTimeline(job.steps)) : null,
    el('section', {}, el('h2', {}, 'Attempts'), historyTable(job.history)),
  ];
}

function childrenSection(jobId) {
  return pagedSection({
    id: 'children',
    title: 'Children',
    caption: 'Child jobs: one delivery per endpoint',
    headings: [['Job'], ['Endpoint'], ['URL', 'wide'], ['Status'], ['Attempts', 'number'], ['Last error', 'wide']],
    empty: 'No children.',
    row: (child) =>
      el(
        'tr',
        {},
        el('td', {}, jobLink(child.jobId)),
        el('td', {}, child.endpointId),
        el('td', { class: 'wide break' }, child.url),
        el('td', {}, statusBadge(child.status)),
        el('td', { class: 'number' }, child.attempts),
        el('td', { class: 'wide error-text' }, child.lastError || ''),
      ),
    fetchPage: async (cursor) => {
      const page = await call(jobPath(jobId, 'children'), { query: { limit: PAGE_SIZE, cursor } });
      return { items: page.children, next: page.nextCursor };
    },
  });
}

function deliveriesSection(jobId) {
  return pagedSection({
    id: 'deliveries',
    title: 'Deliveries',
    caption: 'Delivery attempts: HTTP status, latency and the response',
    headings: [['Endpoint'], ['#', 'number'], ['When'], ['Outcome'], ['HTTP', 'number'], ['Latency', 'number'], ['Response', 'wide'], ['Error']],
    empty: 'No delivery attempts yet.',
    row: (delivery) =>
      el(
        'tr',
        {},
        el('td', {}, delivery.endpointId),
        el('td', { class: 'number' }, delivery.attempt),
        el('td', {}, time(delivery.attemptedAt)),
        el('td', {}, delivery.outcome),
        el('td', { class: 'number' }, delivery.httpStatus ?? '—'),
        el('td', { class: 'number' }, `${delivery.latencyMs} ms`),
        el('td', { class: 'wide break', title: delivery.response || '' }, excerpt(delivery.response)),
        el('td', { class: 'error-text' }, delivery.error || ''),
      ),
    fetchPage: async (cursor) => {
      const page = await call(jobPath(jobId, 'deliveries'), { query: { limit: PAGE_SIZE, cursor } });
      return { items: page.deliveries, next: page.nextCursor };
    },
  });
}

export function jobView(main, jobId) {
  document.title = `Job ${jobId} · offload console`;
  const notice = el('div', { class: 'notice' });
  const problem = el('div', { class: 'notice' });
  const body = el('div', {}, stateLine('loading', 'Loading the job…'));
  const related = el('div');
  const back = el('p', {}, el('a', { href: '#/jobs' }, '← All jobs'));
  replace(main, back, el('h1', {}, 'Job ', el('span', { class: 'mono break' }, jobId)), notice, problem, body, related);
  let seen = null;
  let sections = null;
  let finished = false;

  const load = async () => {
    try {
      const job = await call(jobPath(jobId));
      finished = FINISHED.includes(job.status);
      const current = JSON.stringify(job);
      if (current !== seen) {
        seen = current;
        rerender(body, details(job, notice, () => poller.now()));
      }
      if (!sections && (job.children || job.parentId)) {
        sections = [job.children ? childrenSection(jobId) : null, deliveriesSection(jobId)].filter(Boolean);
        replace(related, sections.map((section) => section.node));
      }
      await Promise.all((sections || []).map((section) => section.refresh()));
      replace(problem);
    } catch (error) {
      const missing = error instanceof ApiError && error.status === 404;
      const text = missing ? `No such job for this API key (${describe(error)}).` : `Could not load the job: ${describe(error)}`;
      replace(problem, stateLine('error', text));
      if (seen === null) replace(body);
    }
  };
  const poller = every(() => (finished ? FINISHED_REFRESH_MS : REFRESH_MS), load);
  return poller;
}
