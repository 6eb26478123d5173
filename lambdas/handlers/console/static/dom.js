// Building the page. Every value that comes from the API goes in as a text node (never as HTML), so a
// payload holding markup shows that markup as characters and runs nothing.

const SVG_NS = 'http://www.w3.org/2000/svg';

function put(node, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
}

export function add(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  put(node, attributes);
  return add(node, children);
}

export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  put(node, attributes);
  return add(node, children);
}

export function replace(node, ...children) {
  node.replaceChildren();
  return add(node, children);
}

const counts = new Intl.NumberFormat('en-US');

export const formatNumber = (value) => counts.format(value);

// A bounded count from GET /stats: `more` means the API stopped counting there.
export function formatCount(entry) {
  if (!entry) return '0';
  return entry.more ? `${counts.format(entry.count)}+` : counts.format(entry.count);
}

export function formatAge(seconds) {
  if (seconds === null || seconds === undefined) return 'none';
  const total = Math.max(0, Math.round(seconds));
  if (total < 60) return `${total} s`;
  if (total < 3600) return `${Math.floor(total / 60)} min ${total % 60} s`;
  return `${Math.floor(total / 3600)} h ${Math.floor((total % 3600) / 60)} min`;
}

// Coarser than formatAge: whole minutes past the first minute, whole hours past the first day.
function roughly(seconds) {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86400)} d ${Math.floor((seconds % 86400) / 3600)} h`;
}

function ago(iso) {
  const seconds = (Date.now() - Date.parse(iso)) / 1000;
  if (Number.isNaN(seconds)) return iso;
  return seconds < 0 ? `in ${roughly(-seconds)}` : `${roughly(seconds)} ago`;
}

// A time as `<time>`: how long ago it was, the exact UTC value in its tooltip (and in full if `exact`).
export function time(iso, { exact = false } = {}) {
  if (!iso) return el('span', { class: 'muted' }, '—');
  return el('time', { datetime: iso, title: iso }, exact ? `${iso} (${ago(iso)})` : ago(iso));
}

export const STATES = ['scheduled', 'pending', 'processing', 'waiting', 'done', 'dead', 'cancelled'];

export function statusBadge(status) {
  const known = STATES.includes(status) ? status : 'unknown';
  return el('span', { class: `status status-${known}` }, status);
}

// A region that says what is going on: loading, nothing to show, or the API's error.
export function stateLine(kind, text) {
  const role = kind === 'error' ? 'alert' : 'status';
  return el('p', { class: `state ${kind}`, role }, text);
}

export function table(caption, headings, rows) {
  return el(
    'div',
    { class: 'table-wrap' },
    el(
      'table',
      {},
      el('caption', { class: 'visually-hidden' }, caption),
      el('thead', {}, el('tr', {}, headings.map(([label, cls]) => el('th', { scope: 'col', class: cls }, label)))),
      el('tbody', {}, rows),
    ),
  );
}

// Replaces `node`'s content and puts back the scroll position and the keyboard focus (the element with
// the same data-key), so a refresh in place moves nothing under the reader.
export function rerender(node, ...children) {
  const active = document.activeElement;
  const key = active && node.contains(active) ? active.getAttribute('data-key') : null;
  const scroll = [window.scrollX, window.scrollY];
  replace(node, children);
  window.scrollTo(...scroll);
  if (key) {
    const again = [...node.querySelectorAll('[data-key]')].find((found) => found.getAttribute('data-key') === key);
    if (again) again.focus({ preventScroll: true });
  }
}
