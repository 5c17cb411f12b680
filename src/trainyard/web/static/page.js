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

// Redraws every `ms` until the page is left or `done()`; a failed redraw shows its error
// until one succeeds.
export function every(draw, ms, done = () => false) {
  const id = setInterval(() => {
    if (done()) {
      clearInterval(id);
      return;
    }
    draw().then(() => notice(''), failed);
  }, ms);
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

