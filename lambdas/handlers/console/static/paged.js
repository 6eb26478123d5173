// A table section filled page by page from an API list with a `nextCursor` ("Show more" appends).
// A refresh re-reads the first page until the reader asks for more, and redraws only what changed.

import { describe } from './api.js';
import { add, el, rerender, stateLine, table } from './dom.js';

export function pagedSection({ id, title, caption, headings, row, empty, fetchPage }) {
  const state = { items: [], next: null, extended: false, seen: null };
  const body = el('div', {}, stateLine('loading', `Loading ${title.toLowerCase()}…`));
  const more = el('button', { type: 'button', hidden: true, 'data-key': `${id}-more` }, 'Show more');
  const node = el('section', { 'aria-labelledby': id }, el('h2', { id }, title), body, more);

  const draw = () => {
    rerender(body, state.items.length ? table(caption, headings, state.items.map(row)) : stateLine('empty', empty));
    more.hidden = !state.next;
  };
  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      const page = await fetchPage(state.next);
      state.items.push(...page.items);
      state.next = page.next;
      state.extended = true;
      draw();
    } catch (error) {
      add(body, stateLine('error', `Could not load more: ${describe(error)}`));
    } finally {
      more.disabled = false;
    }
  });

  const refresh = async () => {
    if (state.extended) return;
    const page = await fetchPage(null);
    const seen = JSON.stringify(page);
    if (seen === state.seen) return;
    state.seen = seen;
    state.items = page.items;
    state.next = page.next;
    draw();
  };
  return { node, refresh };
}
