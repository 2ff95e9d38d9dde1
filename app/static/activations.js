// The activation explorer: capture chosen modules' outputs for the current input, draw each one
// (feature-map grids, heatmaps, histograms), and compare the output with and without an
// intervention (zero a module, scale a channel, ...). Uses POST /v2/models/{m}/activations.

import { activations, infer } from "./api.js";
import { colorLegend, colorScale, featureMapGrid, heatmapCanvas, histogram, histogramCanvas, summary } from "./charts.js";
import { errorBox, formatNumber, formatShape, h, labelled, replace, uniqueId } from "./dom.js";
import { moduleNames } from "./module_tree.js";
import { classification, outputsView } from "./outputs.js";

const OPS = [
  { value: "zero", label: "zero (ablate)" },
  { value: "scale", label: "scale by value" },
  { value: "add", label: "add value" },
  { value: "set", label: "set to value" },
];

/** Modules checked at first: convolutions, else a few leaves (or the model's main blocks). */
export function defaultModules(names) {
  const candidates = names.filter((m) => m.name);
  const convs = candidates.filter((m) => /conv/i.test(m.type)).slice(0, 4);
  if (convs.length) return convs.map((m) => m.name);
  const layers = candidates.filter((m) => /^encoder\.layers?\.\d+$/.test(m.name));
  if (layers.length) return [layers[0].name, layers[layers.length - 1].name];
  return candidates.filter((m) => m.leaf).slice(0, 3).map((m) => m.name);
}

/** The "index" of an intervention from the text field: "" -> none, "3" -> 3, "1,2" -> [1, 2], "..., 0" as is. */
export function parseIndex(text) {
  const t = text.trim();
  if (!t) return null;
  if (/^-?\d+$/.test(t)) return Number(t);
  if (/^-?\d+(\s*,\s*-?\d+)+$/.test(t)) return t.split(",").map((s) => Number(s.trim()));
  return t;
}

/** Captured activations of a response, whatever their layout: [{name, shape, data?, stats?}]. */
export function capturesOf(response) {
  const found = [];
  const add = (name, item) => {
    const entry = { name, shape: item.shape || (item.stats && item.stats.shape) || [], datatype: item.datatype };
    if (Array.isArray(item.data)) entry.data = item.data;
    const stats = item.stats || (item.histogram ? item : null);
    if (stats) entry.stats = stats;
    found.push(entry);
  };
  const acts = response && response.activations;
  if (Array.isArray(acts)) acts.forEach((a) => add(a.name, a));
  else if (acts && typeof acts === "object") Object.entries(acts).forEach(([name, a]) => add(name, a));
  else ((response && response.outputs) || []).filter((o) => o.name.includes(":")).forEach((o) => add(o.name, o));
  return found;
}

function statsLine(s) {
  const parts = [`mean ${formatNumber(s.mean)}`, `std ${formatNumber(s.std)}`, `min ${formatNumber(s.min)}`, `max ${formatNumber(s.max)}`];
  if (s.zero_fraction !== undefined && s.zero_fraction !== null) parts.push(`zeros ${(s.zero_fraction * 100).toFixed(1)}%`);
  return h("p.tensor-stats", null, parts.join(" · "));
}

function sizedHeatmap(values, rows, cols, offset, label) {
  const scale = colorScale(Array.prototype.slice.call(values, offset, offset + rows * cols));
  const canvas = heatmapCanvas(values, rows, cols, scale, offset, label);
  const cellW = Math.max(1, Math.min(16, 640 / cols));
  const cellH = Math.max(6, Math.min(16, cellW));
  canvas.style.width = `${cols * cellW}px`;
  canvas.style.height = `${Math.min(480, rows * cellH)}px`;
  return h("div", null, colorLegend(scale), h("div.heatmap-wrap", null, canvas));
}

/** One capture drawn as a picture suited to its shape. */
export function captureView(capture, item = 0) {
  const shape = capture.shape;
  const meta = h("span.tensor-meta", null, `${capture.datatype || ""} ${formatShape(shape)}`.trim());
  const parts = [h("div.tensor-head", null, h("h4", null, h("code", null, capture.name)), meta)];
  let kind = "histogram";
  if (capture.data) {
    const data = capture.data;
    const batch = shape.length > 1 ? shape[0] : 1;
    const rest = shape.length > 1 ? shape.slice(1) : shape;
    const per = rest.reduce((a, b) => a * b, 1);
    const offset = Math.min(item, batch - 1) * per;
    const itemValues = data.slice(offset, offset + per);
    parts.push(statsLine(summary(itemValues)));
    if (rest.length === 3) {
      kind = "feature-maps";
      parts.push(featureMapGrid(data, rest[0], rest[1], rest[2], offset, { name: capture.name }));
    } else if (rest.length === 2) {
      kind = "heatmap";
      parts.push(h("p.note", null, `Rows: dimension 1 (${rest[0]}); columns: dimension 2 (${rest[1]}).`));
      for (let b = 0; b < Math.min(batch, 4); b += 1) {
        if (batch > 1) parts.push(h("h5.item-title", null, `Batch item ${b}`));
        parts.push(sizedHeatmap(data, rest[0], rest[1], b * per, `${capture.name} item ${b} as a ${rest[0]}×${rest[1]} heatmap`));
      }
    } else if (rest.length === 1 && per > 1) {
      kind = "strip";
      parts.push(sizedHeatmap(data, 1, per, offset, `${capture.name}: ${per} values`));
    }
    parts.push(histogramCanvas(histogram(itemValues, 40), { width: 260, height: 64, label: `${capture.name} values` }));
    if (batch > 1 && kind !== "heatmap") parts.push(h("p.note", null, `Batch item ${item} of ${batch}; statistics and histogram of that item.`));
  } else if (capture.stats) {
    const s = capture.stats;
    parts.push(statsLine(s));
    const counts = Array.isArray(s.histogram) ? s.histogram : (s.histogram && s.histogram.counts) || [];
    const edges = s.bin_edges || (s.histogram && s.histogram.edges) || [];
    parts.push(histogramCanvas({ counts, edges }, { width: 260, height: 64, label: `${capture.name} values` }));
  }
  return h("article.capture", { dataset: { capture: capture.name, kind } }, parts);
}

/** Which prediction changed, in words. */
function comparison(before, after) {
  const a = classification(before);
  const b = classification(after);
  if (!a || !b) return null;
  const delta = Math.max(...a.probabilities.map((p, i) => Math.abs(p - b.probabilities[i])));
  const text = a.predicted === b.predicted
    ? `Prediction unchanged (${a.predicted}); probabilities moved by up to ${(delta * 100).toFixed(1)} points.`
    : `Prediction changed from ${a.predicted} to ${b.predicted}.`;
  return h("p.change", { dataset: { changed: String(a.predicted !== b.predicted) } }, text);
}

/**
 * The explorer for a model.
 * @param {{name: string, modules: object}} model - with the module tree response.
 * @param {{getInputs: () => object[], preview: () => HTMLElement, onChange: Function}} panel
 * @param {{showTryIt: () => void}} hooks
 */
export function activationExplorer(model, panel, hooks) {
  const names = moduleNames(model.modules.root).filter((m) => m.name);
  const chosen = new Set(defaultModules(names));
  const listId = uniqueId("modules");
  const checks = names.map((m) => {
    const id = uniqueId("mod");
    const box = h("input", { type: "checkbox", id, value: m.name, checked: chosen.has(m.name) });
    return { box, row: h("div.check-row", null, box, h("label", { for: id }, h("code", null, m.name), h("span.mod-type", null, m.type))) };
  });
  const pattern = h("input", { id: uniqueId("pattern"), type: "text", placeholder: "e.g. conv*, encoder.layer.*.output", spellcheck: "false", dataset: { testid: "module-pattern" } });
  const reduce = h(
    "select",
    { id: uniqueId("reduce"), dataset: { testid: "reduce" } },
    h("option", { value: "none" }, "full tensors (pictures)"),
    h("option", { value: "stats" }, "statistics only"),
  );

  const intervene = h("input", { type: "checkbox", id: uniqueId("intervene"), dataset: { testid: "intervention-toggle" } });
  const firstConv = names.find((m) => /conv/i.test(m.type)) || names[0];
  const target = h(
    "select",
    { id: uniqueId("target"), dataset: { testid: "intervention-module" } },
    names.map((m) => h("option", { value: m.name, selected: firstConv && m.name === firstConv.name }, m.name)),
  );
  const op = h("select", { id: uniqueId("op"), dataset: { testid: "intervention-op" } }, OPS.map((o) => h("option", { value: o.value }, o.label)));
  const value = h("input", { id: uniqueId("value"), type: "number", step: "any", value: "2", dataset: { testid: "intervention-value" } });
  const index = h("input", { id: uniqueId("index"), type: "text", placeholder: "all; or 3, or 1,2, or ..., 0", spellcheck: "false", dataset: { testid: "intervention-index" } });
  const syncValue = () => {
    value.disabled = op.value === "zero";
  };
  op.addEventListener("change", syncValue);
  syncValue();

  const preview = h("div.preview-slot");
  const outputs = h("div.explorer-outputs", { "aria-live": "polite", dataset: { testid: "explorer-outputs" } });
  const captures = h("div.captures", { dataset: { testid: "captures" } });
  const status = h("p.status-line", { role: "status" });
  let seq = 0;

  function intervention() {
    const entry = { module: target.value, op: op.value };
    if (op.value !== "zero") {
      const v = Number(value.value);
      if (!Number.isFinite(v)) throw new Error("the intervention's value must be a number");
      entry.value = v;
    }
    const i = parseIndex(index.value);
    if (i !== null) entry.index = i;
    return entry;
  }

  function request() {
    const modules = checks.filter((c) => c.box.checked).map((c) => c.box.value);
    for (const p of pattern.value.split(",").map((s) => s.trim()).filter(Boolean)) modules.push(p);
    if (!modules.length) throw new Error("choose at least one module to capture, or type a pattern");
    const body = { inputs: panel.getInputs(), modules, capture: "output", reduce: reduce.value };
    if (intervene.checked) body.interventions = [intervention()];
    return body;
  }

  async function run() {
    seq += 1;
    const mine = seq;
    replace(preview, panel.preview());
    let body;
    try {
      body = request();
    } catch (error) {
      replace(outputs, errorBox(error));
      replace(captures);
      return;
    }
    outputs.dataset.status = "pending";
    status.textContent = "Running…";
    const started = performance.now();
    try {
      const calls = [activations(model.name, body)];
      if (body.interventions) calls.push(infer(model.name, { inputs: body.inputs }));
      const [captured, baseline] = await Promise.all(calls);
      if (mine !== seq) return;
      const hasOutputs = ((captured && captured.outputs) || []).some((o) => !o.name.includes(":"));
      const main = hasOutputs ? captured : await infer(model.name, { inputs: body.inputs });
      if (mine !== seq) return;
      if (baseline) {
        replace(
          outputs,
          h(
            "div.compare",
            null,
            h("div.compare-item", { dataset: { testid: "output-baseline" } }, h("h3", null, "Without intervention"), outputsView(baseline, { caption: "Predicted" })),
            h("div.compare-item", { dataset: { testid: "output-intervened" } }, h("h3", null, `With ${describe(body.interventions[0])}`), outputsView(main, { caption: "Predicted" })),
          ),
          comparison(baseline, main),
        );
      } else {
        replace(outputs, h("div.compare-item", { dataset: { testid: "output-baseline" } }, h("h3", null, "Output"), outputsView(main, { caption: "Predicted" })));
      }
      const found = capturesOf(captured);
      replace(captures, found.length ? found.map((c) => captureView(c)) : h("p.note", null, "The response carried no activations."));
      outputs.dataset.status = "done";
      outputs.dataset.intervened = String(Boolean(body.interventions));
      status.textContent = `${found.length} activation${found.length === 1 ? "" : "s"} captured in ${Math.round(performance.now() - started)} ms${body.interventions ? " (pictures show the edited activations)" : ""}.`;
    } catch (error) {
      if (mine !== seq) return;
      replace(outputs, errorBox(error, "Capturing activations failed"));
      replace(captures);
      outputs.dataset.status = "error";
      status.textContent = "";
    }
  }

  intervene.addEventListener("change", run);
  const element = h(
    "div.explorer",
    null,
    h(
      "form.explorer-controls",
      { onsubmit: (event) => { event.preventDefault(); run(); } },
      h(
        "fieldset",
        null,
        h("legend", null, "Input"),
        preview,
        h("button.link-button", { type: "button", onclick: hooks.showTryIt }, "Change the input in “Try it”"),
      ),
      h(
        "fieldset",
        null,
        h("legend", { id: listId }, "Modules to capture"),
        h("div.check-list", { role: "group", "aria-labelledby": listId, dataset: { testid: "module-list" } }, checks.map((c) => c.row)),
        labelled("and/or names and patterns (comma-separated; * matches anything)", pattern),
        labelled("Return", reduce),
      ),
      h(
        "fieldset",
        null,
        h("legend", null, "Intervention"),
        h("div.check-row", null, intervene, h("label", { for: intervene.id }, "Apply this intervention")),
        h("div.field-grid", null, labelled("Module", target), labelled("Operation", op), labelled("Value", value), labelled("Channels", index)),
        h("p.hint", null, "Channels index dimension 1 (C of N,C,H,W); empty edits the whole output."),
      ),
      h("div.controls", null, h("button.primary", { type: "submit", dataset: { testid: "capture-run" } }, "Capture activations")),
    ),
    h("div.explorer-results", null, status, outputs, captures),
  );
  return { element, run };
}

function describe(entry) {
  const where = entry.index === undefined ? "" : ` [${Array.isArray(entry.index) ? entry.index.join(", ") : entry.index}]`;
  const how = entry.op === "zero" ? "zeroed" : `${entry.op} ${entry.value}`;
  return `${entry.module}${where} ${how}`;
}
