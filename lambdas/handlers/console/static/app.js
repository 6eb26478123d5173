// The console's entry point: sign-in, then a hash router over five views (#/, #/jobs, #/jobs/<id>,
// #/schedules, #/schedules/<id>).
// The hash keeps every view a bookmarkable URL that never holds the key.

import { call, describe, session } from './api.js';
import { el, replace, stateLine } from './dom.js';
import { jobView } from './job.js';
import { jobsView } from './jobs.js';
import { overviewView } from './overview.js';
import { scheduleView } from './schedule.js';
import { schedulesView } from './schedules.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
let current = null;

function navigate(view, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value)).toString();
  location.hash = `#/${view}${query ? `?${query}` : ''}`;
}

function parse(hash) {
  const [path, query = ''] = hash.slice(1).split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query) };
}

function showNav(active) {
  nav.hidden = false;
  signOut.hidden = false;
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.view === active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function route() {
  // Other fragments (the skip link's #main) are in-page jumps, not views.
  const view = location.hash.startsWith('#/') ? location.hash : '#/';
  if (current && view !== location.hash) return;
  if (current) current.stop();
  current = null;
  if (!session.key()) {
    signIn();
    return;
  }
  const { parts, params } = parse(view);
  if (parts[0] === 'jobs' && parts[1]) {
    showNav('jobs');
    current = jobView(main, parts[1]);
  } else if (parts[0] === 'jobs') {
    showNav('jobs');
    current = jobsView(main, params, navigate);
  } else if (parts[0] === 'schedules' && parts[1]) {
    showNav('schedules');
    current = scheduleView(main, parts[1], params.get('client'));
  } else if (parts[0] === 'schedules') {
    showNav('schedules');
    current = schedulesView(main);
  } else {
    showNav('overview');
    current = overviewView(main);
  }
}

function signIn(message) {
  document.title = 'Sign in · offload console';
  nav.hidden = true;
  signOut.hidden = true;
  const key = el('input', { id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const problem = el('div', { class: 'notice' }, message ? stateLine('error', message) : null);
  const button = el('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = el(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    el('h1', { id: 'sign-in-title' }, 'Sign in'),
    el('p', { class: 'muted' }, 'Use the API key printed by make run, or one of your stack\u2019s API keys. It stays in this tab only.'),
    el('label', { for: 'api-key' }, 'API key'),
    key,
    button,
    problem,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = key.value.trim();
    if (!value) {
      replace(problem, stateLine('error', 'Enter an API key.'));
      return;
    }
    button.disabled = true;
    replace(problem, stateLine('loading', 'Checking the key…'));
    session.signIn(value);
    try {
      // The cheapest call a key may make: one job of its list.
      await call('jobs', { query: { limit: 1 } });
      route();
    } catch (error) {
      session.signOut();
      replace(problem, stateLine('error', `Sign-in failed: ${describe(error)}`));
      button.disabled = false;
      key.focus();
    }
  });
  replace(main, form);
  key.focus();
}

signOut.addEventListener('click', () => {
  session.signOut();
  if (current) current.stop();
  current = null;
  signIn();
});
window.addEventListener('hashchange', route);
route();
