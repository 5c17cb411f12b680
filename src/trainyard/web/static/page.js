// What every page shares: the server's polling pace, the states, notices, and what a page
// stops (its timers and streams) when another one opens.

import {ApiError} from './api.js';

export const POLL_MS = 2000;
export const FINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
export const STATES = ['WAITING', 'LAUNCHING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED',
  'PREEMPTED'];
let leaving = [];  // what the current page stops when another one opens

export function onLeave(stop) {
  leaving.push(stop);
}

export function every(fn, ms) {
  const id = setInterval(fn, ms);
  onLeave(() => clearInterval(id));
}

export function main() {
  return document.getElementById('app');
}

export function notice(message) {
  const box = document.getElementById('notice');
  if (!box) return;
  box.textContent = message || '';
  box.className = message ? 'notice shown' : 'notice';
}

export function failed(error) {
  if (error instanceof ApiError && error.status === 401) return;
  notice(error.message || String(error));
}

export function stopPage() {
  for (const stop of leaving) stop();
  leaving = [];
}

