// DOM helpers. Every string from the API goes in as text (textContent, attribute values),
// never as markup.

/** h("a", {href, class, text, on: {click}}, ...children) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") el.textContent = String(v);
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === "value" || k === "checked" || k === "disabled" || k === "selected") el[k] = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

let uid = 0;
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A text that may be huge: the first `limit` characters, and a toggle to see it all. */
export function longText(value, limit = 400, tag = "span") {
  const text = String(value ?? "");
  const wrap = h(tag, { class: tag === "pre" ? "long pre" : "long" });
  if (text.length <= limit) {
    wrap.textContent = text;
    return wrap;
  }
  const body = h("span", { class: "long-body", text: text.slice(0, limit) + "…" });
  const toggle = h("button", {
    type: "button",
    class: "linkish show-all",
    "aria-expanded": "false",
    text: `Show all (${text.length.toLocaleString("en")} characters)`,
  });
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") === "true";
    body.textContent = open ? text.slice(0, limit) + "…" : text;
    toggle.setAttribute("aria-expanded", open ? "false" : "true");
    toggle.textContent = open ? `Show all (${text.length.toLocaleString("en")} characters)` : "Show less";
  });
  wrap.append(body, " ", toggle);
  return wrap;
}

/** A table in a wrapper that scrolls sideways on narrow screens instead of widening the page. */
export function table(caption, headers, rows, empty = "Nothing here yet.") {
  if (!rows.length) return h("p", { class: "empty", text: empty });
  const t = h(
    "table",
    null,
    caption ? h("caption", { class: "sr-only", text: caption }) : null,
    h("thead", null, h("tr", null, headers.map((x) => h("th", { scope: "col", text: x })))),
    h(
      "tbody",
      null,
      rows.map((r) => (r instanceof Node ? r : h("tr", null, r.map((c) => h("td", null, c))))),
    ),
  );
  return h("div", { class: "table-wrap" }, t);
}

/** A labelled control: the label always names it. */
export function field(labelText, control, hint) {
  const id = control.id || nextId("f");
  control.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id, text: labelText }),
    control,
    hint ? h("span", { class: "hint", text: hint }) : null,
  );
}

export function select(name, options, current) {
  return h(
    "select",
    { name },
    options.map(([value, label]) => h("option", { value, text: label, selected: value === (current ?? "") })),
  );
}

export function input(name, value, attrs = {}) {
  return h("input", { name, value: value ?? "", type: "text", autocomplete: "off", spellcheck: "false", ...attrs });
}

export function button(text, onClick, cls) {
  return h("button", { type: "button", class: cls, text, on: { click: onClick } });
}

export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return h("time", { datetime: String(iso), title: String(iso), text: d.toLocaleString() });
}

export function badge(text, kind) {
  return h("span", { class: `badge badge-${String(kind || text).replace(/[^a-z_]/g, "")}`, text });
}
