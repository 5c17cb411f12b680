// A waiting job's predicted start in words, in the browser's local time: the same words as
// the command line's (trainyard/start_wording.py), from the JSON API's predicted_start.

const seconds = (stamp) => (stamp ? Date.parse(stamp) / 1000 : null);
const pad = (n) => String(n).padStart(2, '0');

// "under a minute", "about 35 min", "about 1.5 h", "about 2 d".
export function about(s) {
  if (s < 60) return 'under a minute';
  const minutes = s / 60;
  if (minutes < 90) return 'about ' + Math.round(minutes) + ' min';
  const hours = minutes / 60;
  if (hours < 36) return 'about ' + hours.toFixed(1).replace(/\.0$/, '') + ' h';
  return 'about ' + Math.round(hours / 24) + ' d';
}

// "16:40", or "2026-03-05 18:00" when not today.
function clock(at, now) {
  const when = new Date(at * 1000);
  const today = new Date(now * 1000);
  const time = pad(when.getHours()) + ':' + pad(when.getMinutes());
  if (when.toDateString() === today.toDateString()) return time;
  return when.getFullYear() + '-' + pad(when.getMonth() + 1) + '-' + pad(when.getDate()) +
    ' ' + time;
}

function within(p) {
  return p.horizon_seconds ? 'within the next ' + about(p.horizon_seconds).replace(/^about /, '')
    : "within the forecast's horizon";
}

// "expected to start in about 35 min; 9 in 10 chances by 16:40", or "cannot start: …".
export function describeStart(p, now = Date.now() / 1000) {
  if (p.cannot_start) return 'cannot start: ' + p.cannot_start;
  const p50 = seconds(p.p50);
  const p90 = seconds(p.p90);
  if (p50 === null) return 'not expected to start ' + within(p);
  const wait = Math.max(0, p50 - now);
  const first = wait < 60 ? 'expected to start soon' : 'expected to start in ' + about(wait);
  if (p90 === null) return first + '; 1 in 10 chances or more that it does not start ' + within(p);
  return first + '; 9 in 10 chances by ' + clock(Math.max(p90, now), now);
}

// For a table's cell: "~35 min", "soon", "> 24 h", "cannot start"; "-" without one.
export function briefStart(p, now = Date.now() / 1000) {
  if (!p) return '-';
  if (p.cannot_start) return 'cannot start';
  const p50 = seconds(p.p50);
  if (p50 === null) {
    return p.horizon_seconds ? '> ' + about(p.horizon_seconds).replace(/^about /, '') : 'later';
  }
  return p50 - now < 60 ? 'soon' : '~' + about(p50 - now).replace(/^about /, '');
}

// "as of 40 s ago".
export function startAge(p, now = Date.now() / 1000) {
  const age = Math.max(0, now - (seconds(p.as_of) || now));
  if (age < 1) return 'as of just now';
  for (const [unit, size] of [['d', 86400], ['h', 3600], ['min', 60]]) {
    if (age >= size) return 'as of ' + Math.floor(age / size) + ' ' + unit + ' ago';
  }
  return 'as of ' + Math.floor(age) + ' s ago';
}
