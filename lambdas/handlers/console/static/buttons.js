// Retry, cancel and the operator's bulk retry: each asks first, in a modal dialog, then reports the
// API's answer (its error message as it is, e.g. 409 not_retryable or 403 forbidden). The schedule
// page's actions report the same way (`perform`); only its Delete asks first (`act`).

import { ApiError, call, describe, jobPath } from './api.js';
import { el, replace, stateLine } from './dom.js';

// Resolves true only when the person chose `confirm`; Escape and "Go back" resolve false.
export function confirmAction({ title, text, confirm }) {
  return new Promise((resolve) => {
    const dialog = el(
      'dialog',
      { class: 'confirm', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-text' },
      el('h2', { id: 'confirm-title' }, title),
      el('p', { id: 'confirm-text' }, text),
      el(
        'div',
        { class: 'actions' },
        el('button', { type: 'button', onclick: () => dialog.close('back') }, 'Go back'),
        el('button', { type: 'button', class: 'danger', onclick: () => dialog.close('confirm') }, confirm),
      ),
    );
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// Sends `request` with `button` disabled, then reports: `done` with the answer, or the API's error.
export async function perform(button, notice, label, request, done) {
  button.disabled = true;
  replace(notice, stateLine('loading', `${label}…`));
  try {
    done(await request());
  } catch (error) {
    const hint = error instanceof ApiError && error.status === 403 ? ' (only the operator key may do this)' : '';
    replace(notice, stateLine('error', `${label} failed: ${describe(error)}${hint}`));
  } finally {
    button.disabled = false;
  }
}

export async function act(button, notice, question, request, done) {
  if (await confirmAction(question)) await perform(button, notice, question.confirm, request, done);
}

// Which actions the job offers: the API says so in `allowedActions` (and checks again when one is taken).
export function allowedActions(job) {
  const allowed = Array.isArray(job.allowedActions) ? job.allowedActions : [];
  return { retry: allowed.includes('retry'), cancel: allowed.includes('cancel') };
}

export function retryButton(job, notice, onDone) {
  const fanOut = Boolean(job.children && job.children.failed > 0);
  const question = {
    title: 'Retry this job?',
    text: fanOut
      ? `Its ${job.children.failed} dead deliveries run again, and the job waits for them.`
      : 'It goes back to pending with a fresh attempt budget and runs again.',
    confirm: 'Retry',
  };
  const button = el('button', { type: 'button', class: 'primary' }, 'Retry');
  button.addEventListener('click', () =>
    act(button, notice, question, () => call(jobPath(job.jobId, 'retry'), { method: 'POST' }), (answer) => {
      replace(notice, stateLine('ok', `Retry accepted: the job is ${answer.status}.`));
      onDone();
    }),
  );
  return button;
}

export function cancelButton(job, notice, onDone) {
  const question = {
    title: 'Cancel this job?',
    text:
      job.status === 'waiting'
        ? 'Its pending deliveries are cancelled, then the job. This cannot be undone.'
        : 'It will not run. This cannot be undone.',
    confirm: 'Cancel job',
  };
  const button = el('button', { type: 'button', class: 'danger' }, 'Cancel job');
  button.addEventListener('click', () =>
    act(button, notice, question, () => call(jobPath(job.jobId, 'cancel'), { method: 'POST' }), (answer) => {
      replace(notice, stateLine('ok', `The job is ${answer.status}.`));
      onDone();
    }),
  );
  return button;
}

// The operator's "Retry all dead" (of one type when the list is filtered by type).
export function retryAllDeadButton(notice, jobType) {
  const scope = jobType ? `every dead ${jobType} job` : 'every dead job';
  const question = {
    title: 'Retry all dead jobs?',
    text: `This starts a bulk job that retries ${scope} (up to 1,000). Only the operator key may do this.`,
    confirm: 'Retry all dead',
  };
  const body = jobType ? { status: 'dead', type: jobType } : { status: 'dead' };
  const button = el('button', { type: 'button' }, 'Retry all dead');
  button.addEventListener('click', () =>
    act(button, notice, question, () => call('jobs/retry', { method: 'POST', body }), (answer) => {
      replace(
        notice,
        el(
          'p',
          { class: 'state ok', role: 'status' },
          'Bulk retry started as job ',
          el('a', { href: `#/jobs/${encodeURIComponent(answer.jobId)}` }, answer.jobId),
          '.',
        ),
      );
    }),
  );
  return button;
}
