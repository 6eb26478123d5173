// The jobs list: filtered by status and type, paged with the API's cursor, refreshed in place every few
// seconds without moving the page or the keyboard focus.

import { call, describe, every } from './api.js';
import { retryAllDeadButton } from './buttons.js';
import { STATES, el, replace, rerender, stateLine, statusBadge, table, time } from './dom.js';

const REFRESH_MS = 5000;
const PAGE_SIZE = 25;

function filterForm(filters, onChange, known) {
  const status = el(
    'select',
    { id: 'filter-status', name: 'status' },
    el('option', { value: '' }, 'any status'),
    STATES.map((state) => el('option', { value: state, selected: state === filters.status }, state)),
  );
  const type = el('input', { id: 'filter-type', name: 'type', value: filters.type, placeholder: 'any type', autocomplete: 'off', spellcheck: 'false', list: 'job-types' });
  const form = el(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter jobs' },
    el('div', { class: 'field' }, el('label', { for: 'filter-status' }, 'Status'), status),
    el('div', { class: 'field' }, el('label', { for: 'filter-type' }, 'Type'), type, known),
    el('button', { type: 'submit' }, 'Filter'),
  );
  const submit = (event) => {
    if (event) event.preventDefault();
    onChange({ status: status.value, type: type.value.trim() });
  };
  form.addEventListener('submit', submit);
  status.addEventListener('change', () => submit());
  return form;
}

// A delivery names its fan-out: the job its row belongs to.
function parentLink(parentId) {
  const href = `#/jobs/${encodeURIComponent(parentId)}`;
  return el('span', { class: 'parent' }, ' of ', el('a', { class: 'mono', href, title: parentId }, parentId.slice(0, 8)));
}

function jobRow(job) {
  return el(
    'tr',
    { 'data-job-id': job.jobId },
    el('td', {}, el('a', { class: 'mono job-id', href: `#/jobs/${encodeURIComponent(job.jobId)}`, 'data-key': job.jobId }, job.jobId)),
    el('td', {}, job.type, job.parentId ? parentLink(job.parentId) : null),
    el('td', {}, statusBadge(job.status)),
    el('td', {}, job.priority || ''),
    el('td', { class: 'number wide' }, `${job.attempts} / ${job.maxAttempts}`),
    el('td', { class: 'wide' }, time(job.createdAt)),
    el('td', {}, time(job.statusAt || job.updatedAt)),
    el('td', { class: 'wide error-text' }, job.lastError || ''),
  );
}

const HEADINGS = [['Job'], ['Type'], ['Status'], ['Priority'], ['Attempts', 'number wide'], ['Created', 'wide'], ['In this status since'], ['Last error', 'wide']];

function showPage(body, page, filters) {
  if (!page.jobs.length) {
    const filtered = filters.status || filters.type;
    rerender(body, stateLine('empty', filtered ? 'No jobs match these filters.' : 'No jobs yet: submit one with POST /jobs.'));
  } else {
    rerender(body, table('Jobs, newest first', HEADINGS, page.jobs.map(jobRow)));
  }
}

// Built once and updated in place, so a refresh never takes the keyboard focus off its buttons.
function pager(state, reload) {
  const newer = el('button', { type: 'button' }, '← Newer');
  const older = el('button', { type: 'button' }, 'Older →');
  const label = el('span');
  newer.addEventListener('click', () => {
    state.cursors.pop();
    reload();
  });
  older.addEventListener('click', () => {
    state.cursors.push(state.next);
    reload();
  });
  const update = () => {
    newer.disabled = state.cursors.length === 1;
    older.disabled = !state.next;
    replace(label, `Page ${state.cursors.length}`);
  };
  update();
  return { node: el('nav', { class: 'pager', 'aria-label': 'Pages' }, newer, label, older), update };
}

function toolbar(filters, notice) {
  const auto = el('input', { type: 'checkbox', id: 'auto-refresh', checked: true });
  return {
    auto,
    node: el(
      'div',
      { class: 'toolbar' },
      el('label', { class: 'check' }, auto, `Refresh every ${REFRESH_MS / 1000} s`),
      retryAllDeadButton(notice, filters.type),
    ),
  };
}

export function jobsView(main, params, navigate) {
  const filters = { status: params.get('status') || '', type: params.get('type') || '' };
  document.title = 'Jobs · offload console';
  const notice = el('div', { class: 'notice' });
  const body = el('div', {}, stateLine('loading', 'Loading jobs…'));
  const tools = toolbar(filters, notice);
  const state = { cursors: [null], next: null };
  const onFilter = (chosen) => navigate('jobs', chosen);
  const reload = () => {
    replace(body, stateLine('loading', 'Loading jobs…'));
    load();
  };
  const pages = pager(state, reload);
  // The types of the jobs listed so far, as the type filter's suggestions (no extra request).
  const known = el('datalist', { id: 'job-types' });
  const types = new Set();
  const suggest = (jobs) => {
    const before = types.size;
    for (const job of jobs) types.add(job.type);
    if (types.size !== before) replace(known, [...types].sort().map((name) => el('option', { value: name })));
  };
  replace(main, el('h1', {}, 'Jobs'), filterForm(filters, onFilter, known), tools.node, notice, body, pages.node);

  let failed = false;
  const load = async () => {
    try {
      const cursor = state.cursors[state.cursors.length - 1];
      const query = { status: filters.status, type: filters.type, limit: PAGE_SIZE, cursor };
      const page = await call('jobs', { query });
      state.next = page.nextCursor || null;
      suggest(page.jobs || []);
      showPage(body, page, filters);
      pages.update();
      if (failed) replace(notice);
      failed = false;
    } catch (error) {
      failed = true;
      replace(notice, stateLine('error', `Could not load jobs: ${describe(error)}`));
      replace(body);
    }
  };
  return every(REFRESH_MS, () => (tools.auto.checked ? load() : undefined));
}
