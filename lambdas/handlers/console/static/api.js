// Calls to the offload API with the key the user typed. The key lives in sessionStorage only: it is
// sent as the x-api-key header, never put in a URL, and goes when the tab closes or on Sign out.

const KEY_NAME = 'offload.apiKey';

// The API's base URL: the stage this script was served from (…/<stage>/console/api.js -> …/<stage>/).
export const apiBase = new URL('..', import.meta.url);

export const session = {
  key() {
    return sessionStorage.getItem(KEY_NAME);
  },
  signIn(key) {
    sessionStorage.setItem(KEY_NAME, key);
  },
  signOut() {
    sessionStorage.removeItem(KEY_NAME);
  },
};

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }

  // What the page shows: the status and the API's own code and message.
  describe() {
    const status = this.status ? `${this.status} ` : '';
    return `${status}${this.code}: ${this.message}`;
  }
}

function errorOf(response, text) {
  let document = null;
  try {
    document = JSON.parse(text);
  } catch {
    // Not JSON: an answer from something in front of the API; its text is the best message there is.
  }
  const error = document && typeof document.error === 'object' ? document.error : {};
  const message = error.message || (document && document.message) || text || response.statusText;
  return new ApiError(response.status, error.code || 'http_error', String(message));
}

// `path` is relative to the API's base (`jobs`, `jobs/<id>/retry`); empty query values are left out.
export async function call(path, { method = 'GET', query = {}, body } = {}) {
  const url = new URL(path, apiBase);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const headers = { 'x-api-key': session.key() || '' };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    throw new ApiError(0, 'network_error', `the API could not be reached (${error.message})`);
  }
  const text = await response.text();
  if (!response.ok) throw errorOf(response, text);
  return text ? JSON.parse(text) : null;
}

export const jobPath = (jobId, ...rest) => ['jobs', encodeURIComponent(jobId), ...rest].join('/');
export const schedulePath = (scheduleId, ...rest) => ['schedules', encodeURIComponent(scheduleId), ...rest].join('/');

// Runs `task` now and again `interval()` ms after each run ends until `stop()`; `now()` runs it at once
// and starts the wait again. A hidden tab skips its runs: an unseen console should not spend the key's
// request quota.
export function every(interval, task) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    clearTimeout(timer);
    if (!document.hidden) await task();
    clearTimeout(timer);
    if (!stopped) timer = setTimeout(run, typeof interval === 'function' ? interval() : interval);
  };
  run();
  return {
    now: run,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

export const describe = (error) => (error instanceof ApiError ? error.describe() : String(error));
