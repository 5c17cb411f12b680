// The models: their versions, aliases with their history, and each version's lineage.

import {get} from './api.js';
import {append, enc, fill, h, link, number, pairs, table, when} from './dom.js';
import {failed} from './page.js';

export async function modelsPage(root) {
  const data = await get('/models');
  const models = data.models || [];
  append(root, h('h1', {}, 'Models'), models.length ? table(['model', 'versions', 'latest',
    'aliases', 'updated'], models.map((m) => [link('#/models/' + enc(m.name), m.name),
    m.versions || 0, m.latest_version || 0, pairs(m.aliases), when(m.updated_at)]))
    : h('p', {class: 'muted'}, 'No models yet.'));
}

export async function modelPage(root, name) {
  const model = await get('/models/' + enc(name));
  const versions = model.versions || [];
  const lineage = h('div', {id: 'lineage', class: 'card'});
  const showLineage = async (version) => {
    const data = await get('/models/' + enc(name) + '/lineage', [['version', version]]);
    const ds = data.dataset;
    const code = data.code || {};
    const res = data.resources || {};
    fill(lineage, h('h2', {}, 'Lineage of version ' + version),
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

