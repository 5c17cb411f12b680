// Metric charts drawn as SVG: one chart a metric, one line a run.

import {get} from './api.js';
import {fill, h, number, svg} from './dom.js';

// A line chart of several series over step (or point order where a point has no step);
// each series [{label, points: [{x, y}]}] in its own colour.
export function lineChart(title, series) {
  const width = 480; const height = 220; const pad = {l: 54, r: 12, t: 24, b: 28};
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => p.x); const ys = all.map((p) => p.y);
  let [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= Math.abs(y0) || 1; y1 += Math.abs(y1) || 1; }
  const px = (x) => pad.l + (x - x0) / (x1 - x0) * (width - pad.l - pad.r);
  const py = (y) => height - pad.b - (y - y0) / (y1 - y0) * (height - pad.t - pad.b);
  const chart = svg('svg', {viewBox: `0 0 ${width} ${height}`, class: 'chart',
    role: 'img', 'data-metric': title});
  chart.appendChild(svg('text', {x: pad.l, y: 15, class: 'chart-title'}, title));
  chart.appendChild(svg('line', {x1: pad.l, y1: height - pad.b, x2: width - pad.r,
    y2: height - pad.b, class: 'axis'}));
  chart.appendChild(svg('line', {x1: pad.l, y1: pad.t, x2: pad.l, y2: height - pad.b,
    class: 'axis'}));
  for (const [y, anchor] of [[y0, height - pad.b], [y1, pad.t + 4]]) {
    chart.appendChild(svg('text', {x: pad.l - 6, y: anchor, class: 'tick', 'text-anchor': 'end'},
      number(y)));
  }
  for (const [x, anchor] of [[x0, 'start'], [x1, 'end']]) {
    chart.appendChild(svg('text', {x: px(x), y: height - 8, class: 'tick', 'text-anchor': anchor},
      number(x)));
  }
  series.forEach((s, i) => {
    const colour = 'series-' + (i % 6);
    const group = svg('g', {class: 'series ' + colour, 'data-label': s.label});
    group.appendChild(svg('polyline', {class: 'line',
      points: s.points.map((p) => px(p.x).toFixed(1) + ',' + py(p.y).toFixed(1)).join(' ')}));
    for (const p of s.points) {
      const dot = svg('circle', {cx: px(p.x).toFixed(1), cy: py(p.y).toFixed(1), r: 2.5,
        class: 'point'});
      dot.appendChild(svg('title', {}, s.label + ' step ' + p.x + ': ' + number(p.y)));
      group.appendChild(dot);
    }
    chart.appendChild(group);
  });
  const legend = h('div', {class: 'legend'}, series.map((s, i) =>
    h('span', {class: 'key series-' + (i % 6)}, s.label)));
  return h('figure', {class: 'chart-box'}, chart, legend);
}

export function pointsOf(series) {
  return (series.points || []).map((p, i) => ({x: p.has_step ? Number(p.step || 0) : i,
    y: Number(p.value || 0)}));
}

// Draws one chart per metric, each run a line; returns the compare reply.
export async function drawSeries(into, runIds, labelByRun) {
  const data = await get('/runs/compare', [...runIds.map((id) => ['run_ids', id]),
    ['include_series', 'true']]);
  const byMetric = new Map();
  for (const run of data.runs || []) {
    for (const series of run.series || []) {
      if (!byMetric.has(series.key)) byMetric.set(series.key, []);
      byMetric.get(series.key).push({label: labelByRun ? run.run_id + ' ' + (run.name || '')
        : series.key, points: pointsOf(series)});
    }
  }
  const charts = [...byMetric.entries()].filter(([, list]) => list.some((s) => s.points.length))
    .map(([key, list]) => lineChart(key, list.filter((s) => s.points.length)));
  fill(into, ...(charts.length ? charts
    : [h('p', {class: 'muted'}, 'No metrics yet.')]));
  return data;
}

