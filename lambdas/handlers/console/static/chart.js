// Jobs finished per minute over the last hour, as stacked SVG bars drawn here (no chart library).

import { el, formatNumber, svg } from './dom.js';

const WIDTH = 720;
const HEIGHT = 150;
const LEFT = 36;
const BOTTOM = 22;
const TOP = 10;

function minuteLabel(iso) {
  const match = /T(\d\d:\d\d)/.exec(iso || '');
  return match ? `${match[1]} UTC` : String(iso);
}

function bars(minutes, scale, slot) {
  const plot = HEIGHT - BOTTOM - TOP;
  return minutes.map((entry, index) => {
    const done = Number(entry.done) || 0;
    const dead = Number(entry.dead) || 0;
    const x = LEFT + index * slot + 1;
    const width = Math.max(1, slot - 2);
    const doneHeight = (done / scale) * plot;
    const deadHeight = (dead / scale) * plot;
    const base = HEIGHT - BOTTOM;
    return svg(
      'g',
      {},
      svg('title', {}, `${minuteLabel(entry.minute)}: ${done} done, ${dead} dead`),
      svg('rect', { class: 'bar-done', x, width, y: base - doneHeight, height: doneHeight }),
      svg('rect', { class: 'bar-dead', x, width, y: base - doneHeight - deadHeight, height: deadHeight }),
    );
  });
}

function axes(scale, minutes) {
  const base = HEIGHT - BOTTOM;
  const first = minutes.length ? minuteLabel(minutes[0].minute) : '';
  return [
    svg('line', { class: 'axis', x1: LEFT, x2: WIDTH, y1: base, y2: base }),
    svg('line', { class: 'grid', x1: LEFT, x2: WIDTH, y1: TOP, y2: TOP }),
    svg('text', { class: 'tick', x: LEFT - 6, y: TOP + 4, 'text-anchor': 'end' }, formatNumber(scale)),
    svg('text', { class: 'tick', x: LEFT - 6, y: base, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'tick', x: LEFT, y: HEIGHT - 4 }, first),
    svg('text', { class: 'tick', x: WIDTH, y: HEIGHT - 4, 'text-anchor': 'end' }, 'now'),
  ];
}

export function finishedChart(minutes) {
  const list = Array.isArray(minutes) ? minutes : [];
  const totals = list.map((m) => (Number(m.done) || 0) + (Number(m.dead) || 0));
  const scale = Math.max(1, ...totals);
  const done = list.reduce((sum, m) => sum + (Number(m.done) || 0), 0);
  const dead = list.reduce((sum, m) => sum + (Number(m.dead) || 0), 0);
  const summary = `${formatNumber(done)} done and ${formatNumber(dead)} dead in the last ${list.length} minutes`;
  const slot = list.length ? (WIDTH - LEFT) / list.length : 0;
  return el(
    'figure',
    { class: 'chart' },
    svg(
      'svg',
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': summary },
      axes(scale, list),
      bars(list, scale, slot),
    ),
    el(
      'figcaption',
      {},
      el('span', { class: 'key key-done' }, 'done'),
      el('span', { class: 'key key-dead' }, 'dead'),
      el('span', {}, summary),
    ),
  );
}
