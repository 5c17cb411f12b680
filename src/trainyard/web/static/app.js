// The Trainyard dashboard: one page, routed by the URL's hash, that reads and writes only
// through the JSON API under /api/v1. Every string from the server reaches the page as a
// text node (never as HTML), so a job's name or a log line cannot become markup.
'use strict';

const API = '/api/v1';
const POLL_MS = 2000;
const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
const STATES = ['WAITING', 'LAUNCHING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED',
  'PREEMPTED'];
const SVG_NS = 'http://www.w3.org/2000/svg';

// --- building the page ---------------------------------------------------------------------

// h('a', {href: '#/jobs', class: 'x', onclick: fn}, 'text', child): an element; strings
// become text nodes.
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else if (key === 'value') node.value = value;
    else if (key === 'checked') node.checked = Boolean(value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

// append(node, child, [child, …], …): strings become text nodes; empty values are left out.
function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  for (const child of children) {
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(headers, rows, rowClass) {
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((name) => h('th', {}, name)))),
    h('tbody', {}, rows.map((cells, i) => h('tr', {class: rowClass ? rowClass(i) : null},
      cells.map((cell) => h('td', {}, cell))))));
}

function badge(state) {
  return h('span', {class: 'state state-' + String(state || '').toLowerCase()}, state || '—');
}

function when(stamp) {
  return stamp ? String(stamp).replace('T', ' ').replace(/\.\d+/, '').replace('+00:00', 'Z')
    : '—';
}

function pairs(map) {
  return Object.entries(map || {}).map(([k, v]) => k + '=' + v).join(', ');
}

function number(value) {
  if (typeof value !== 'number') return String(value);
  return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, '');
}

function link(href, text) {
  return h('a', {href: href}, text);
}

function field(label, input) {
  return h('label', {class: 'field'}, h('span', {}, label), input);
}

// --- talking to the server -----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function cookie(name) {
  for (const part of document.cookie.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return decodeURIComponent(rest.join('='));
  }
  return '';
}

async function request(method, path, body) {
  const headers = {'Accept': 'application/json'};
  if (method !== 'GET') headers['X-CSRF-Token'] = cookie('trainyard_csrf');
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body)});
  const text = await response.text();
  let data = {};
  try { data = text ? JSON.parse(text) : {}; } catch (e) { data = {}; }
  if (!response.ok) {
    const message = (data.error && data.error.message) || response.statusText;
    if (response.status === 401 && path.startsWith(API)) showSignin(message);
    throw new ApiError(response.status, message);
  }
  return data;
}

function get(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of params || []) {
    if (value !== '' && value !== undefined && value !== null) query.append(key, value);
  }
  const suffix = query.toString() ? '?' + query.toString() : '';
  return request('GET', API + path + suffix);
}

function enc(text) {
  return encodeURIComponent(text);
}

// --- the frame: header, notices, routing ---------------------------------------------------

const session = {who: null};
let leaving = [];  // what the current page stops when another one opens

function every(fn, ms) {
  const id = setInterval(fn, ms);
  leaving.push(() => clearInterval(id));
}

function main() {
  return document.getElementById('app');
}

function notice(message) {
  const box = document.getElementById('notice');
  if (!box) return;
  box.textContent = message || '';
  box.className = message ? 'notice shown' : 'notice';
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) return;
  notice(error.message || String(error));
}

function header() {
  const who = session.who || {};
  const nav = h('nav', {},
    link('#/queues', 'Queues'), link('#/jobs', 'Jobs'), link('#/runs', 'Runs'),
    link('#/models', 'Models'));
  const user = h('span', {class: 'who', id: 'who'}, who.user ? who.user : 'single user');
  const out = who.single_user ? null
    : h('button', {id: 'signout', type: 'button', onclick: signout}, 'Sign out');
  return h('header', {}, h('strong', {class: 'brand'}, 'Trainyard'), nav,
    h('span', {class: 'grow'}), user, out);
}

function frame(content) {
  const root = main();
  root.replaceChildren(header(), h('div', {id: 'notice', class: 'notice'}), content);
}

function stopPage() {
  for (const stop of leaving) stop();
  leaving = [];
}

const ROUTES = [
  [/^#\/queues$/, queuesPage],
  [/^#\/jobs$/, jobsPage],
  [/^#\/jobs\/([^/]+)$/, jobPage],
  [/^#\/runs$/, runsPage],
  [/^#\/runs\/compare\/(.+)$/, comparePage],
  [/^#\/runs\/([^/]+)$/, runPage],
  [/^#\/models$/, modelsPage],
  [/^#\/models\/([^/]+)$/, modelPage],
];

async function route() {
  stopPage();
  if (!session.who) {
    try {
      session.who = await request('GET', API + '/whoami');
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) failedStart(error);
      return;
    }
  }
  const hash = location.hash || '#/jobs';
  for (const [pattern, page] of ROUTES) {
    const match = pattern.exec(hash);
    if (match) {
      const content = h('section', {class: 'page'});
      frame(content);
      page(content, ...match.slice(1).map(decodeURIComponent)).catch(failed);
      return;
    }
  }
  location.hash = '#/jobs';
}

function failedStart(error) {
  main().replaceChildren(h('p', {class: 'notice shown'}, error.message || String(error)));
}

// --- signing in and out --------------------------------------------------------------------

function showSignin(message) {
  stopPage();
  session.who = null;
  const token = h('input', {id: 'token', type: 'password', autocomplete: 'off',
    placeholder: 'ty_…', required: true});
  const error = h('p', {id: 'signin-error', class: 'error'}, message && message !== 'Unauthorized'
    ? message : '');
  const form = h('form', {id: 'signin', class: 'signin', onsubmit: async (event) => {
    event.preventDefault();
    try {
      await request('POST', '/signin', {token: token.value});
      session.who = null;
      route();
    } catch (e) {
      error.textContent = e.message;
    }
  }}, h('h1', {}, 'Sign in to Trainyard'),
  field('API token', token), h('button', {type: 'submit'}, 'Sign in'), error);
  main().replaceChildren(form);
  token.focus();
}

async function signout() {
  try {
    await request('POST', '/signout');
  } catch (error) {
    failed(error);
    return;
  }
  showSignin('');
}

// --- Queues --------------------------------------------------------------------------------

function usage(used, total, unit) {
  const have = total === undefined || total === null ? '∞' : number(total);
  return number(used || 0) + ' / ' + have + (unit ? ' ' + unit : '');
}

function meter(used, total) {
  const bar = h('span', {class: 'meter'});
  if (total) {
    const fill = h('span', {class: 'fill'});
    fill.style.width = Math.min(100, Math.round(100 * (used || 0) / total)) + '%';
    bar.appendChild(fill);
  }
  return bar;
}

async function queuesPage(root) {
  const body = h('div');
  append(root, h('h1', {}, 'Queues'), body);
  const draw = async () => {
    const data = await get('/queues');
    const queues = table(['queue', 'waiting', 'running', 'limit', 'priority', 'fair-share weight',
      'pools', 'who may submit'], (data.queues || []).map((q) => [q.name, q.waiting || 0,
      q.running || 0, q.max_running || '—', q.priority || 0, number(q.weight || 0),
      (q.pools || []).join(', '),
      [...(q.users || []), ...(q.teams || []).map((t) => 'team ' + t)].join(', ') || 'everyone']));
    const pools = table(['pool', 'executor', 'jobs', 'CPUs', 'memory', 'GPUs'],
      (data.pools || []).map((p) => {
        const used = p.used || {};
        return [p.name, p.executor, (p.jobs || 0) + ' / ' + (p.max_jobs || '∞'),
          [meter(used.cpus, p.cpus), usage(used.cpus, p.cpus)],
          [meter(used.memory_mb, p.memory_mb), usage(used.memory_mb, p.memory_mb, 'MiB')],
          [meter(used.gpus, p.gpus), usage(used.gpus, p.gpus || null)]];
      }));
    const teamRows = [];
    for (const team of data.teams || []) {
      for (const q of team.quotas || [{}]) {
        const used = q.used || {}; const quota = q.quota || {}; const limit = q.borrow_limit || {};
        const borrowed = ['cpus', 'memory_mb', 'gpus'].map((r) =>
          Math.max(0, (used[r] || 0) - (quota[r] || 0)));
        teamRows.push([team.name, (team.members || []).join(', '), q.pool || '—',
          usage(used.cpus, quota.cpus) + ' CPUs', usage(used.memory_mb, quota.memory_mb, 'MiB'),
          usage(used.gpus, quota.gpus) + ' GPUs',
          borrowed.some((b) => b > 0) ? 'borrows ' + borrowed.map(number).join(' / ') +
            ' (limit ' + [limit.cpus, limit.memory_mb, limit.gpus].map((v) => number(v || 0))
            .join(' / ') + ')' : 'within quota']);
      }
    }
    const teams = teamRows.length ? table(['team', 'members', 'pool', 'CPUs', 'memory', 'GPUs',
      'borrowing (CPUs / MiB / GPUs)'], teamRows) : h('p', {class: 'muted'}, 'No teams.');
    body.replaceChildren(
      h('p', {class: 'muted'}, (data.running || 0) + ' running of at most ' +
        (data.max_running || '∞') + ' · policy ' + (data.source || 'built-in') + ', loaded ' +
        when(data.loaded_at)),
      h('h2', {}, 'Queues'), queues, h('h2', {}, 'Pools'), pools, h('h2', {}, 'Teams'), teams);
  };
  await draw();
  every(() => draw().catch(failed), POLL_MS);
}

// --- Jobs ----------------------------------------------------------------------------------

const jobFilters = {state: '', queue: '', label: '', pages: [''], page: 0};

async function jobsPage(root) {
  const state = h('select', {id: 'filter-state'}, h('option', {value: ''}, 'any state'),
    STATES.map((s) => h('option', {value: s}, s)));
  state.value = jobFilters.state;
  const queue = h('input', {id: 'filter-queue', value: jobFilters.queue, placeholder: 'queue'});
  const label = h('input', {id: 'filter-label', value: jobFilters.label,
    placeholder: 'key=value, …'});
  const list = h('div', {id: 'jobs'});
  const pager = h('div', {class: 'pager'});
  const filters = h('form', {class: 'filters', onsubmit: (event) => {
    event.preventDefault();
    Object.assign(jobFilters, {state: state.value, queue: queue.value.trim(),
      label: label.value.trim(), pages: [''], page: 0});
    draw().catch(failed);
  }}, field('State', state), field('Queue', queue), field('Labels', label),
  h('button', {type: 'submit'}, 'Filter'));

  const draw = async () => {
    const params = [['page_size', 25], ['page_token', jobFilters.pages[jobFilters.page]],
      ['queue', jobFilters.queue], ['states', jobFilters.state]];
    for (const one of jobFilters.label.split(',')) {
      if (one.trim()) params.push(['labels', one.trim()]);
    }
    const data = await get('/jobs', params);
    const jobs = data.jobs || [];
    list.replaceChildren(jobs.length ? table(['job', 'name', 'state', 'queue', 'labels',
      'submitted', 'message'], jobs.map((j) => [link('#/jobs/' + enc(j.job_id), j.job_id),
      h('span', {class: 'job-name'}, j.name), badge(j.state), j.queue, pairs(j.labels),
      when(j.submitted_at), j.message || ''])) : h('p', {class: 'muted'}, 'No jobs.'));
    jobFilters.pages[jobFilters.page + 1] = data.next_page_token || '';
    const previous = h('button', {type: 'button', disabled: jobFilters.page === 0,
      onclick: () => { jobFilters.page -= 1; draw().catch(failed); }}, '‹ Newer');
    const next = h('button', {type: 'button', disabled: !data.next_page_token,
      onclick: () => { jobFilters.page += 1; draw().catch(failed); }}, 'Older ›');
    pager.replaceChildren(previous, h('span', {}, 'page ' + (jobFilters.page + 1)), next);
  };
  append(root, h('h1', {}, 'Jobs'), filters, list, pager, submitForm());
  await draw();
  every(() => draw().catch(failed), POLL_MS);
}

function keyValues(text) {
  const out = {};
  for (const line of text.split(/[\n,]/)) {
    const [key, ...rest] = line.split('=');
    if (key.trim()) out[key.trim()] = rest.join('=').trim();
  }
  return out;
}

function submitForm() {
  const inputs = {
    name: h('input', {id: 'submit-name', required: true}),
    command: h('textarea', {id: 'submit-command', rows: 3,
      placeholder: 'python train.py (run by /bin/sh -c)'}),
    image: h('input', {id: 'submit-image', placeholder: 'image (optional)'}),
    cpus: h('input', {id: 'submit-cpus', type: 'number', step: 'any', min: 0, value: '1'}),
    memory: h('input', {id: 'submit-memory', type: 'number', min: 0, value: '1024'}),
    gpus: h('input', {id: 'submit-gpus', type: 'number', min: 0, value: '0'}),
    queue: h('input', {id: 'submit-queue', placeholder: 'default'}),
    labels: h('input', {id: 'submit-labels', placeholder: 'key=value, …'}),
    hyper: h('textarea', {id: 'submit-hyperparameters', rows: 3, placeholder: 'lr=0.01'}),
  };
  const error = h('p', {class: 'error', id: 'submit-error'});
  return h('form', {id: 'submit', class: 'card', onsubmit: async (event) => {
    event.preventDefault();
    error.textContent = '';
    const body = {
      name: inputs.name.value.trim(), command: inputs.command.value,
      image: inputs.image.value.trim(), queue: inputs.queue.value.trim(),
      labels: keyValues(inputs.labels.value), hyperparameters: keyValues(inputs.hyper.value),
      resources: {cpus: Number(inputs.cpus.value || 0),
        memory_mb: Number(inputs.memory.value || 0), gpus: Number(inputs.gpus.value || 0)},
      client_request_id: 'web-' + Date.now() + '-' + Math.random().toString(16).slice(2),
    };
    try {
      const made = await request('POST', API + '/jobs', body);
      location.hash = '#/jobs/' + enc(made.job_id);
    } catch (e) {
      error.textContent = e.message;
    }
  }}, h('h2', {}, 'Submit a job'),
  h('div', {class: 'grid'}, field('Name', inputs.name), field('Image', inputs.image),
    field('Queue', inputs.queue), field('CPUs', inputs.cpus), field('Memory (MiB)', inputs.memory),
    field('GPUs', inputs.gpus), field('Labels', inputs.labels)),
  field('Command', inputs.command), field('Hyperparameters (one key=value a line)', inputs.hyper),
  h('button', {type: 'submit', id: 'submit-button'}, 'Submit'), error);
}

// --- one Job -------------------------------------------------------------------------------

async function jobPage(root, jobId) {
  const title = h('h1', {}, 'Job ', h('code', {}, jobId));
  const summary = h('div', {id: 'job-summary', class: 'card'});
  const timeline = h('ol', {id: 'timeline', class: 'timeline'});
  const charts = h('div', {id: 'job-charts', class: 'charts'});
  const log = h('pre', {id: 'log', class: 'log'});
  append(root, title, summary, h('h2', {}, 'Timeline'), timeline, h('h2', {}, 'Metrics'), charts,
    h('h2', {}, 'Log'), log);

  let finished = false;
  let attemptShown = 0;
  const draw = async () => {
    const job = await get('/jobs/' + enc(jobId));
    const spec = job.spec || {};
    finished = FINAL.has(job.state);
    const runId = jobId + '-' + (job.attempt || 1);
    const cancel = finished ? null : h('button', {id: 'cancel', type: 'button', class: 'danger',
      onclick: async () => {
        try { await request('POST', API + '/jobs/' + enc(jobId) + '/cancel', {}); } catch (e) {
          failed(e);
        }
        draw().catch(failed);
      }}, 'Cancel');
    const waiting = job.state === 'WAITING' ? h('p', {id: 'pending'},
      'Position ' + (job.queue_position || 0) + ' in queue ' + (spec.queue || 'default') +
      (job.pending_reason ? ': ' + job.pending_reason.message : '')) : null;
    const model = job.model ? link('#/models/' + enc(job.model.model_name),
      'model ' + job.model.model_name + ' v' + job.model.version) : null;
    summary.replaceChildren(
      h('p', {}, h('span', {id: 'job-name', class: 'job-name'}, spec.name || ''), ' ',
        h('span', {id: 'job-state'}, badge(job.state)), ' ', cancel),
      waiting,
      job.message ? h('p', {id: 'job-message'}, job.message) : null,
      table(['owner', 'queue', 'resources', 'hyperparameters', 'labels', 'attempt'], [[
        job.owner || '', spec.queue || 'default',
        number((spec.resources || {}).cpus || 0) + ' CPUs, ' +
          ((spec.resources || {}).memory_mb || 0) + ' MiB, ' + ((spec.resources || {}).gpus || 0) +
          ' GPUs', pairs(spec.hyperparameters), pairs(spec.labels), job.attempt || 1]]),
      h('p', {class: 'links'}, job.attempt ? link('#/runs/' + enc(runId), 'run ' + runId) : null,
        model ? ' · ' : null, model));
    timeline.replaceChildren(...(job.transitions || []).map((t) => h('li', {},
      h('time', {}, when(t.time)), ' ', badge(t.to_state), ' ',
      h('span', {class: 'reason'}, t.reason || ''))));
    if (job.attempt && job.attempt !== attemptShown) {
      attemptShown = job.attempt;
    }
    if (attemptShown) await drawSeries(charts, [runId], false);
  };
  await draw();
  followLog(jobId, log);
  const timer = setInterval(() => {
    if (finished) clearInterval(timer);
    draw().catch(failed);
  }, POLL_MS);
  leaving.push(() => clearInterval(timer));
}

function followLog(jobId, into) {
  const source = new EventSource(API + '/jobs/' + enc(jobId) + '/logs?follow=true');
  const close = () => source.close();
  leaving.push(close);
  source.addEventListener('log', (event) => {
    const chunk = JSON.parse(event.data);
    const atEnd = into.scrollTop + into.clientHeight >= into.scrollHeight - 4;
    into.appendChild(document.createTextNode(chunk.text || ''));
    if (atEnd) into.scrollTop = into.scrollHeight;
  });
  source.addEventListener('end', () => {
    close();
    into.dataset.ended = 'true';
  });
  source.addEventListener('error', (event) => {
    if (event.data) {
      try { notice(JSON.parse(event.data).error.message); } catch (e) { notice(event.data); }
      close();
    }
  });
}

// --- charts --------------------------------------------------------------------------------

// A line chart of several series over step (or point order where a point has no step);
// each series [{label, points: [{x, y}]}] in its own colour.
function lineChart(title, series) {
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

function pointsOf(series) {
  return (series.points || []).map((p, i) => ({x: p.has_step ? Number(p.step || 0) : i,
    y: Number(p.value || 0)}));
}

// Draws one chart per metric, each run a line; returns the compare reply.
async function drawSeries(into, runIds, labelByRun) {
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
  into.replaceChildren(...(charts.length ? charts
    : [h('p', {class: 'muted'}, 'No metrics yet.')]));
  return data;
}

// --- Runs ----------------------------------------------------------------------------------

const runFilters = {metrics: '', dataset: '', algorithm: '', sort: '', descending: true};

async function runsPage(root) {
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
    list.replaceChildren(runs.length ? table(['', 'run', 'name', 'state', 'algorithm',
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

async function runPage(root, runId) {
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
  if (!FINAL.has(run.state)) every(() => drawSeries(charts, [runId], false).catch(failed), POLL_MS);
}

function comparedTable(title, rows, runs, id) {
  if (!rows.length) return null;
  return [h('h2', {}, title), table(['', ...runs.map((r) => r.run_id)], rows.map((row) => [
    row.key, ...(row.values || []).map((v) => v.present
      ? (typeof v.value === 'number' ? number(v.value) : v.value) : '—')]),
  (i) => rows[i].differs ? 'differs' : null)].map((node, i) => {
    if (i === 1) node.id = id;
    return node;
  });
}

async function comparePage(root, ids) {
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

// --- Models --------------------------------------------------------------------------------

async function modelsPage(root) {
  const data = await get('/models');
  const models = data.models || [];
  append(root, h('h1', {}, 'Models'), models.length ? table(['model', 'versions', 'latest',
    'aliases', 'updated'], models.map((m) => [link('#/models/' + enc(m.name), m.name),
    m.versions || 0, m.latest_version || 0, pairs(m.aliases), when(m.updated_at)]))
    : h('p', {class: 'muted'}, 'No models yet.'));
}

async function modelPage(root, name) {
  const model = await get('/models/' + enc(name));
  const versions = model.versions || [];
  const lineage = h('div', {id: 'lineage', class: 'card'});
  const showLineage = async (version) => {
    const data = await get('/models/' + enc(name) + '/lineage', [['version', version]]);
    const ds = data.dataset;
    const code = data.code || {};
    const res = data.resources || {};
    lineage.replaceChildren(h('h2', {}, 'Lineage of version ' + version),
      table(['run', 'owner', 'dataset', 'code', 'hyperparameters', 'resources'], [[
        data.run_id ? link('#/runs/' + enc(data.run_id), data.run_id) : '—', data.owner || '',
        ds ? ds.name + ':' + (ds.version || '') : '—',
        h('code', {}, [code.image, code.image_id, code.git_commit, code.command]
          .filter(Boolean).join(' · ')),
        pairs(data.hyperparameters),
        number(res.cpus || 0) + ' CPUs, ' + (res.memory_mb || 0) + ' MiB, ' + (res.gpus || 0) +
          ' GPUs, ' + (data.workers || 1) + ' worker(s)']]));
  };
  append(root, h('h1', {}, 'Model ', h('code', {}, model.name)),
    h('h2', {}, 'Versions'), table(['version', 'aliases', 'run', 'files', 'size', 'created',
      'content hash', ''], versions.slice().reverse().map((v) => [v.version,
      (v.aliases || []).join(', '), link('#/runs/' + enc(v.run_id), v.run_id), v.file_count || 0,
      (v.size_bytes || 0) + ' B', when(v.created_at), h('code', {},
        String(v.content_hash || '').slice(0, 12)),
      h('button', {type: 'button', onclick: () => showLineage(v.version).catch(failed)},
        'Lineage')])),
    h('h2', {}, 'Aliases'), Object.keys(model.aliases || {}).length
      ? table(['alias', 'version'], Object.entries(model.aliases).map(([a, v]) => [a, v]))
      : h('p', {class: 'muted'}, 'No aliases.'),
    h('h2', {}, 'Alias history'), (model.alias_history || []).length
      ? table(['time', 'alias', 'from', 'to', 'by'], model.alias_history.map((c) => [when(c.time),
        c.alias, c.from_version ? 'v' + c.from_version : 'new', 'v' + c.to_version,
        c.actor || '']))
      : h('p', {class: 'muted'}, 'No alias changes.'),
    lineage);
  if (versions.length) await showLineage(versions[versions.length - 1].version);
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', route);
