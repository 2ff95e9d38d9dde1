// Small DOM helpers: element construction without innerHTML (server text is never parsed as HTML).

/**
 * Create an element.
 * @param {string} tag - tag name, optionally with classes: "div.card.wide".
 * @param {object|null} attrs - attributes; `on*` functions become listeners, `dataset` an object,
 *   `text` sets textContent, booleans toggle boolean attributes.
 * @param {...(Node|string|number|null|undefined|Array)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "text") {
      el.textContent = String(value);
    } else if (key === "class") {
      el.className = [el.className, value].filter(Boolean).join(" ");
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children (nested arrays, strings and numbers allowed; null skipped). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace all children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

let uid = 0;
/** A document-unique id with a readable prefix. */
export function uniqueId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** 61706 -> "61,706". */
export function formatCount(n) {
  return Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–";
}

/** 246824 -> "241.0 KiB". */
export function formatBytes(n) {
  if (!Number.isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A number in at most 4 significant digits, with exponent for tiny/huge values. */
export function formatNumber(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
  if (x === 0) return "0";
  const abs = Math.abs(x);
  if (abs >= 1e5 || abs < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}

/** "[-1, 1, 28, 28]" */
export function formatShape(shape) {
  return `[${(shape || []).join(", ")}]`;
}

/** An error box (role=alert) naming the HTTP status when there is one. */
export function errorBox(error, what) {
  const status = error && error.status ? `HTTP ${error.status}: ` : "";
  const message = error && error.message ? error.message : String(error);
  return h("div.error-box", { role: "alert" }, what ? h("strong", null, `${what}: `) : null, status + message);
}

/** A form control with its label before it: [<label for=control.id>, control]. */
export function labelled(text, control) {
  return [h("label", { for: control.id }, text), control];
}

/** A small "label: value" line for stat lists. */
export function stat(label, value) {
  return h("div.stat", null, h("dt", null, label), h("dd", null, value));
}
