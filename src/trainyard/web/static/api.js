// Talking to the server: JSON over the API with the session cookie, and the CSRF header on
// every request that changes something.

export const API = '/api/v1';
let unauthenticated = () => {};

// What a 401 from the API does (the sign-in form), set once by the frame.
export function whenUnauthenticated(handler) {
  unauthenticated = handler;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function cookie(name) {
  for (const part of document.cookie.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return decodeURIComponent(rest.join('='));
  }
  return '';
}

export async function request(method, path, body) {
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
    if (response.status === 401 && path.startsWith(API)) unauthenticated(message);
    throw new ApiError(response.status, message);
  }
  return data;
}

export function get(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of params || []) {
    if (value !== '' && value !== undefined && value !== null) query.append(key, value);
  }
  const suffix = query.toString() ? '?' + query.toString() : '';
  return request('GET', API + path + suffix);
}

