// The Trainyard dashboard: one page, routed by the URL's hash, that reads and writes only
// through the JSON API under /api/v1. Every string from the server reaches the page as a
// text node (never as HTML), so a job's name or a log line cannot become markup.

import {API, ApiError, request, whenUnauthenticated} from './api.js';
import {field, fill, h, link} from './dom.js';
import {failed, main, stopPage} from './page.js';
import {queuesPage} from './queues.js';
import {jobPage, jobsPage} from './jobs.js';
import {comparePage, runPage, runsPage} from './runs.js';
import {modelPage, modelsPage} from './models.js';

const session = {who: null};

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
  fill(root, header(), h('div', {id: 'notice', class: 'notice'}), content);
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

whenUnauthenticated(showSignin);
window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', route);
