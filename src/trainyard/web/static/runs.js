// The runs: filtered and sorted by metric, one run, and several compared.

import {get} from './api.js';
import {append, badge, enc, field, fill, h, link, number, pairs, table, when} from './dom.js';
import {FINAL, POLL_MS, every, failed} from './page.js';
import {drawSeries} from './chart.js';

export const runFilters = {metrics: '', dataset: '', algorithm: '', sort: '', descending: true};

export async function runsPage(root) {
  const metrics = h('input', {id: 'filter-metrics', value: runFilters.metrics,
    placeholder: 'accuracy>=0.9, loss<0.2'});
  const dataset = h('input', {id: 'filter-dataset', value: runFilters.dataset,
    placeholder: 'name or name:version'});
  const algorithm = h('input', {id: 'filter-algorithm', value: runFilters.algorithm});
  const sort = h('input', {id: 'sort-metric', value: runFilters.sort, placeholder: 'metric'});
  const descending = h('input', {id: 'sort-descending', type: 'checkbox',
    checked: runFilters.descending});
  const list = h('div', {id: 'runs'});
  const chosen = new Set();
  const compare = h('button', {id: 'compare', type: 'button', disabled: true, onclick: () => {
    location.hash = '#/runs/compare/' + [...chosen].map(enc).join(',');
  }}, 'Compare selected');
  const form = h('form', {class: 'filters', onsubmit: (event) => {
    event.preventDefault();
    Object.assign(runFilters, {metrics: metrics.value.trim(), dataset: dataset.value.trim(),
      algorithm: algorithm.value.trim(), sort: sort.value.trim(),
      descending: descending.checked});
    draw().catch(failed);
  }}, field('Metrics', metrics), field('Dataset', dataset), field('Algorithm', algorithm),
  field('Sort by metric', sort), field('Highest first', descending),
  h('button', {type: 'submit', id: 'filter-runs'}, 'Filter'));

  const draw = async () => {
    const params = [['dataset', runFilters.dataset], ['algorithm', runFilters.algorithm],
      ['sort_metric', runFilters.sort], ['page_size', 100]];
    if (runFilters.sort) params.push(['descending', String(runFilters.descending)]);
    for (const one of runFilters.metrics.split(',')) {
      if (one.trim()) params.push(['metrics', one.trim()]);
    }
    const data = await get('/runs', params);
    const runs = data.runs || [];
    const keys = [...new Set(runs.flatMap((r) => Object.keys(r.metrics || {})))].sort();
    fill(list, runs.length ? table(['', 'run', 'name', 'state', 'algorithm',
      'dataset', ...keys], runs.map((r) => {
      const box = h('input', {type: 'checkbox', class: 'pick', value: r.run_id,
        checked: chosen.has(r.run_id), onchange: (event) => {
          if (event.target.checked) chosen.add(r.run_id); else chosen.delete(r.run_id);
          compare.disabled = chosen.size < 2;
        }});
      const ds = (r.spec || {}).dataset;
      return [box, link('#/runs/' + enc(r.run_id), r.run_id), r.name, badge(r.state),
        r.algorithm || '', ds ? ds.name + ':' + String(ds.version || '').slice(0, 12) : '',
        ...keys.map((k) => (r.metrics || {})[k] ? number(r.metrics[k].value) : '')];
    })) : h('p', {class: 'muted'}, 'No runs match.'));
  };
  append(root, h('h1', {}, 'Runs'), form, list, h('p', {}, compare));
  await draw();
}

export async function runPage(root, runId) {
  const run = await get('/runs/' + enc(runId));
  const spec = run.spec || {};
  const charts = h('div', {class: 'charts', id: 'run-charts'});
  append(root, h('h1', {}, 'Run ', h('code', {}, run.run_id)),
    h('div', {class: 'card'}, h('p', {}, h('span', {class: 'job-name'}, run.name), ' ',
      badge(run.state), ' · ', link('#/jobs/' + enc(run.job_id), 'job ' + run.job_id),
      run.model ? [' · ', link('#/models/' + enc(run.model.model_name), 'model ' +
        run.model.model_name + ' v' + run.model.version)] : null),
    table(['algorithm', 'executor', 'pool', 'started', 'ended', 'hyperparameters', 'command'],
      [[run.algorithm || '', run.executor || '', run.pool || '', when(run.started_at),
        when(run.ended_at), pairs(spec.hyperparameters),
        h('code', {}, (run.code || {}).command || (run.code || {}).image || '')]]),
    run.message ? h('p', {}, run.message) : null),
    h('h2', {}, 'Metrics'), charts);
  await drawSeries(charts, [runId], false);
  let state = run.state;
  every(async () => {
    state = (await get('/runs/' + enc(runId))).state;
    await drawSeries(charts, [runId], false);
  }, POLL_MS, () => FINAL.has(state) || state === 'PREEMPTED');  // an attempt's end
}

// One row a key, one column a run; the rows whose values differ carry class "differs".
export function comparedTable(title, rows, runs, id) {
  if (!rows.length) return null;
  const values = rows.map((row) => [row.key, ...(row.values || []).map((v) => v.present
    ? (typeof v.value === 'number' ? number(v.value) : v.value) : '—')]);
  const shown = table(['', ...runs.map((r) => r.run_id + ' ' + (r.name || ''))], values,
    (i) => rows[i].differs ? 'differs' : null);
  shown.id = id;
  return [h('h2', {}, title), shown];
}

export async function comparePage(root, ids) {
  const runIds = ids.split(',').filter(Boolean);
  const charts = h('div', {class: 'charts', id: 'compare-charts'});
  append(root, h('h1', {}, 'Compare runs'), charts);
  const data = await drawSeries(charts, runIds, true);
  const runs = data.runs || [];
  append(root, h('p', {class: 'muted'}, 'Rows that differ between the runs are highlighted.'),
    comparedTable('Settings', data.settings || [], runs, 'compare-settings'),
    comparedTable('Hyperparameters', data.hyperparameters || [], runs, 'compare-hyperparameters'),
    comparedTable('Last metric values', data.metrics || [], runs, 'compare-metrics'));
}

