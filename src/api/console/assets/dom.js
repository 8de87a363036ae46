// DOM helpers. Everything the console shows is built with createElement and textContent, never
// from HTML strings: message names, data and client ids are whatever publishers sent, so they must
// never be parsed as markup (the page's Trusted Types policy makes HTML string sinks throw anyway).

/** The element of `id` (the page declares every id the modules use). */
export const byId = (id) => {
  const el = document.getElementById(id)
  if (!el) throw new Error(`console page: no element #${id}`)
  return el
}

/**
 * An element: `props` are attributes (`class`, `data-*`, `title`...) except `text` (its text) and
 * `on*` functions (listeners); `children` are nodes or strings (text).
 */
export function h(tag, props = {}, ...children) {
  return build(document.createElement(tag), props, children)
}

const SVG = 'http://www.w3.org/2000/svg'

/** An SVG element, as `h` builds HTML ones. */
export function s(tag, props = {}, ...children) {
  return build(document.createElementNS(SVG, tag), props, children)
}

function build(el, props, children) {
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'text') el.textContent = String(v)
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v)
    else el.setAttribute(k, String(v))
  }
  for (const c of children) if (c !== undefined && c !== null) el.append(c)
  return el
}

/** Replaces the children of `el` with `children`. */
export const fill = (el, ...children) => el.replaceChildren(...children.filter((c) => c !== undefined && c !== null))

/** Puts `el` first in a log list and keeps at most `max` entries (memory stays bounded however long the page runs). */
export function prepend(list, el, max) {
  list.prepend(el)
  while (list.childElementCount > max) list.lastElementChild.remove()
}

/** A status line: text, and `error` styling when `kind` is 'error'. */
export function status(el, text, kind = '') {
  el.textContent = text
  el.dataset.kind = kind
}

/** `ms` as a local time of day (hh:mm:ss). */
export const timeOf = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false })

/** Text of at most `max` characters (long payloads are cut in the view, never in what is sent). */
export const clip = (text, max = 2000) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text

/** A definition list's rows from [term, value] pairs. */
export const rows = (pairs) =>
  pairs.flatMap(([term, value, attrs = {}]) => [h('dt', { text: term }), h('dd', { ...attrs, text: value })])
