// The queues, pools and teams: what waits, runs and is held, against each limit and quota.

import {get} from './api.js';
import {append, fill, h, number, table, when} from './dom.js';
import {POLL_MS, every} from './page.js';

export function usage(used, total, unit) {
  const have = total === undefined || total === null ? '∞' : number(total);
  return number(used || 0) + ' / ' + have + (unit ? ' ' + unit : '');
}

export function meter(used, total) {
  const bar = h('span', {class: 'meter'});
  if (total) {
    const fill = h('span', {class: 'fill'});
    fill.style.width = Math.min(100, Math.round(100 * (used || 0) / total)) + '%';
    bar.appendChild(fill);
  }
  return bar;
}

// A budget's period as "in the last ..." reads: "7 days", "24 hours", "day".
export function period(seconds) {
  for (const [unit, size] of [['day', 86400], ['hour', 3600], ['minute', 60]]) {
    if (seconds >= size && seconds % size === 0) {
      const count = seconds / size;
      return count === 1 ? unit : count.toLocaleString('en-US') + ' ' + unit + 's';
    }
  }
  return number(seconds) + ' s';
}

// Hours with thousands separated, as the server's sentences write them: "982", "1,000", "2.5".
export function hours(value) {
  const v = value || 0;
  return v.toLocaleString('en-US', {maximumFractionDigits: Math.abs(v) >= 100 ? 0 : 1});
}

function budgetCell(limited) {
  if (!limited) return '—';
  return [meter(limited.used, limited.limit), hours(limited.used) + ' of ' +
    hours(limited.limit)];
}

// Each team's and queue's budget over time: GPU-hours and CPU-hours used in its window.
export function budgetsTable(data) {
  const budgets = [...(data.team_budgets || []),
    ...(data.queues || []).filter((q) => q.budget).map((q) => q.budget)];
  if (!budgets.length) return h('p', {class: 'muted'}, 'No budgets.');
  return table(['budget', 'in the last', 'GPU-hours used', 'CPU-hours used'],
    budgets.map((b) => [b.kind + ' ' + b.name, period(b.period_seconds || 0),
      budgetCell(b.gpu_hours), budgetCell(b.cpu_hours)]));
}

export async function queuesPage(root) {
  const body = h('div');
  append(root, h('h1', {}, 'Queues'), body);
  const draw = async () => {
    const data = await get('/queues');
    const queues = table(['queue', 'waiting', 'running', 'limit', 'priority', 'fair-share weight',
      'used (GPU·h, decayed)', 'standing (used / weight)', 'pools', 'who may submit'],
    (data.queues || []).map((q) => [q.name, q.waiting || 0,
      q.running || 0, q.max_running || '—', q.priority || 0, number(q.weight || 0),
      number((q.fair_share_usage || 0) / 3600), number((q.fair_share || 0) / 3600),
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
    fill(body,
      h('p', {class: 'muted'}, (data.running || 0) + ' running of at most ' +
        (data.max_running || '∞') + ' · policy ' + (data.source || 'built-in') + ', loaded ' +
        when(data.loaded_at) + ' · fair share as of ' +
        (data.fair_share_as_of ? when(data.fair_share_as_of) : 'no saved usage yet') +
        '; of queues of equal priority, the lowest standing goes next'),
      h('h2', {}, 'Queues'), queues, h('h2', {}, 'Pools'), pools, h('h2', {}, 'Teams'), teams,
      h('h2', {}, 'Budgets'), h('p', {class: 'muted'}, 'GPU- and CPU-hours used in each ' +
        'budget\'s rolling window, as of ' + (data.budgets_as_of ? when(data.budgets_as_of) :
        '—') + '; a job that would run past one waits (BUDGET); running jobs are not stopped'),
      budgetsTable(data));
  };
  await draw();
  every(draw, POLL_MS);
}

