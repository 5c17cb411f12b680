// The jobs: a filtered, paged list that polls, a submit form, and one job's page with its
// timeline, why it waits, its live log, its charts and a cancel button.

import {API, get, request} from './api.js';
import {append, badge, enc, field, fill, h, link, number, pairs, table, when} from './dom.js';
import {FINAL, POLL_MS, STATES, every, failed, notice, onLeave} from './page.js';
import {drawSeries} from './chart.js';
import {briefStart, describeStart, startAge} from './starts.js';

export const jobFilters = {state: '', queue: '', label: '', pages: [''], page: 0};

export async function jobsPage(root) {
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
    fill(list, jobs.length ? table(['job', 'name', 'state', 'queue', 'labels',
      'submitted', 'starts', 'message'], jobs.map((j) => [link('#/jobs/' + enc(j.job_id),
      j.job_id), h('span', {class: 'job-name'}, j.name), badge(j.state), j.queue,
      pairs(j.labels), when(j.submitted_at), h('span', {class: 'starts', title:
      j.predicted_start ? describeStart(j.predicted_start) : null},
      briefStart(j.predicted_start)), j.message || ''])) :
      h('p', {class: 'muted'}, 'No jobs.'));
    jobFilters.pages[jobFilters.page + 1] = data.next_page_token || '';
    const previous = h('button', {type: 'button', disabled: jobFilters.page === 0,
      onclick: () => { jobFilters.page -= 1; draw().catch(failed); }}, '‹ Newer');
    const next = h('button', {type: 'button', disabled: !data.next_page_token,
      onclick: () => { jobFilters.page += 1; draw().catch(failed); }}, 'Older ›');
    fill(pager, previous, h('span', {}, 'page ' + (jobFilters.page + 1)), next);
  };
  append(root, h('h1', {}, 'Jobs'), filters, list, pager, submitForm());
  await draw();
  every(draw, POLL_MS);
}

export function keyValues(text) {
  const out = {};
  for (const line of text.split(/[\n,]/)) {
    const [key, ...rest] = line.split('=');
    if (key.trim()) out[key.trim()] = rest.join('=').trim();
  }
  return out;
}

export function submitForm() {
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
    attempts: h('input', {id: 'submit-max-attempts', type: 'number', min: 0, max: 100,
      placeholder: "the queue's"}),
    limit: h('input', {id: 'submit-time-limit', type: 'number', min: 0, step: 'any',
      placeholder: 'none'}),
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
      max_attempts: Number(inputs.attempts.value || 0),
      time_limit_seconds: Number(inputs.limit.value || 0) * 60,
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
    field('GPUs', inputs.gpus), field('Labels', inputs.labels),
    field('Max attempts', inputs.attempts), field('Time limit (minutes)', inputs.limit)),
  field('Command', inputs.command), field('Hyperparameters (one key=value a line)', inputs.hyper),
  h('button', {type: 'submit', id: 'submit-button'}, 'Submit'), error);
}

// "2 of at most 3, 1 retried": the attempt it is at, and what it may use.
function attempts(job) {
  const most = (job.spec || {}).max_attempts;
  return String(job.attempt || 1) + (most ? ' of at most ' + most : '') +
    (job.retries ? ', ' + job.retries + ' retried' : '');
}

export async function jobPage(root, jobId) {
  const title = h('h1', {}, 'Job ', h('code', {}, jobId));
  const summary = h('div', {id: 'job-summary', class: 'card'});
  const timeline = h('ol', {id: 'timeline', class: 'timeline'});
  const charts = h('div', {id: 'job-charts', class: 'charts'});
  const log = h('pre', {id: 'log', class: 'log'});
  append(root, title, summary, h('h2', {}, 'Timeline'), timeline, h('h2', {}, 'Metrics'), charts,
    h('h2', {}, 'Log'), log);

  let finished = false;
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
    const predicted = job.state === 'WAITING' && job.predicted_start ? h('p',
      {id: 'predicted-start'}, describeStart(job.predicted_start) + ' ',
      h('span', {class: 'muted'}, '(' + startAge(job.predicted_start) + ')')) : null;
    // The jobs it waits for (--after), each a link, with its condition and its state now.
    const needs = spec.after || [];
    const after = needs.length ? h('p', {id: 'job-after'}, 'After ', ...needs.flatMap((d, i) => [
      i ? ', ' : null, link('#/jobs/' + enc(d.job_id), d.job_id),
      ' (' + (d.condition || 'succeeded') + '; ' + (d.met ? 'done' : d.state || '') + ')'])) : null;
    const model = job.model ? link('#/models/' + enc(job.model.model_name),
      'model ' + job.model.model_name + ' v' + job.model.version) : null;
    fill(summary,
      h('p', {}, h('span', {id: 'job-name', class: 'job-name'}, spec.name || ''), ' ',
        h('span', {id: 'job-state'}, badge(job.state)), ' ', cancel),
      waiting,
      after,
      predicted,
      job.message ? h('p', {id: 'job-message'}, job.message) : null,
      table(['owner', 'queue', 'resources', 'hyperparameters', 'labels', 'attempt',
        'time limit'], [[
        job.owner || '', spec.queue || 'default',
        number((spec.resources || {}).cpus || 0) + ' CPUs, ' +
          ((spec.resources || {}).memory_mb || 0) + ' MiB, ' + ((spec.resources || {}).gpus || 0) +
          ' GPUs', pairs(spec.hyperparameters), pairs(spec.labels), attempts(job),
        spec.time_limit_seconds ? number(spec.time_limit_seconds / 60) + ' min' : 'none']]),
      h('p', {class: 'links'}, job.attempt ? link('#/runs/' + enc(runId), 'run ' + runId) : null,
        model ? ' · ' : null, model));
    fill(timeline, ...(job.transitions || []).map((t) => h('li', {},
      h('time', {}, when(t.time)), ' ', badge(t.to_state), ' ',
      h('span', {class: 'reason'}, t.reason || ''))));
    if (job.attempt) await drawSeries(charts, [runId], false);
    else fill(charts, h('p', {class: 'muted'}, 'No run yet.'));
  };
  await draw();
  followLog(jobId, log);
  every(draw, POLL_MS, () => finished);
}

export function followLog(jobId, into) {
  const source = new EventSource(API + '/jobs/' + enc(jobId) + '/logs?follow=true');
  const close = () => source.close();
  onLeave(close);
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

