// Building the page from data: every string becomes a text node, never markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

// h('a', {href: '#/jobs', class: 'x', onclick: fn}, 'text', child): an element; strings
// become text nodes.
export function h(tag, attrs, ...children) {
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
export function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// fill(node, …children): the node's children replaced, as append adds them.
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, ...children);
}

export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  for (const child of children) {
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function table(headers, rows, rowClass) {
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((name) => h('th', {}, name)))),
    h('tbody', {}, rows.map((cells, i) => h('tr', {class: rowClass ? rowClass(i) : null},
      cells.map((cell) => h('td', {}, cell))))));
}

export function badge(state) {
  return h('span', {class: 'state state-' + String(state || '').toLowerCase()}, state || '—');
}

export function when(stamp) {
  return stamp ? String(stamp).replace('T', ' ').replace(/\.\d+/, '').replace('+00:00', 'Z')
    : '—';
}

export function pairs(map) {
  return Object.entries(map || {}).map(([k, v]) => k + '=' + v).join(', ');
}

export function number(value) {
  if (typeof value !== 'number') return String(value);
  return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, '');
}

export function link(href, text) {
  return h('a', {href: href}, text);
}

export function field(label, input) {
  return h('label', {class: 'field'}, h('span', {}, label), input);
}

export function enc(text) {
  return encodeURIComponent(text);
}
