// Named parameters and buffers: shape, dtype, statistics and a histogram of the values.

import { histogramCanvas } from "./charts.js";
import { formatBytes, formatCount, formatNumber, formatShape, h } from "./dom.js";

function row(entry) {
  const s = entry.stats;
  const hist = s && s.histogram
    ? histogramCanvas(s.histogram, { width: 180, height: 44, label: `values of ${entry.name}` })
    : h("span.note", null, s && s.nonfinite ? `${s.nonfinite} non-finite` : "–");
  return h(
    "tr",
    { dataset: { name: entry.name } },
    h("th", { scope: "row", "data-label": "Name" }, h("code", null, entry.name)),
    h("td", { "data-label": "Shape" }, formatShape(entry.shape)),
    h("td", { "data-label": "Dtype" }, entry.dtype),
    h("td.num", { "data-label": "Elements" }, formatCount(entry.numel)),
    h("td.num", { "data-label": "Mean ± std" }, s && s.mean !== undefined ? `${formatNumber(s.mean)} ± ${formatNumber(s.std)}` : "–"),
    h("td.num", { "data-label": "Range" }, s && s.min !== undefined ? `${formatNumber(s.min)} … ${formatNumber(s.max)}` : "–"),
    h("td.hist-cell", { "data-label": "Histogram" }, hist),
  );
}

function table(entries, caption) {
  return h(
    "table.data-table.param-table",
    null,
    h("caption", null, caption),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Name", "Shape", "Dtype", "Elements", "Mean ± std", "Range", "Histogram"].map((t) => h("th", { scope: "col" }, t)),
      ),
    ),
    h("tbody", null, entries.map(row)),
  );
}

/** Tables of parameters and buffers from ``GET .../parameters?stats=true``. */
export function parametersView(response) {
  const t = response.totals || {};
  const parts = [
    h(
      "p.note",
      null,
      `${formatCount(t.parameters)} parameter tensors, ${formatCount(t.parameter_elements)} elements (${formatBytes(t.parameter_bytes)}); `,
      `${formatCount(t.buffers)} buffers (${formatBytes(t.buffer_bytes)}). Statistics over finite values; the red line marks 0.`,
    ),
    h("div.table-scroll", null, table(response.parameters || [], "Parameters")),
  ];
  if ((response.buffers || []).length) parts.push(h("div.table-scroll", null, table(response.buffers, "Buffers")));
  return h("div", { dataset: { testid: "parameters" } }, parts);
}
