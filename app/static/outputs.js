// Showing inference outputs: class probabilities as bars, anything else as values or statistics.

import { barList, histogram, histogramCanvas, summary } from "./charts.js";
import { formatNumber, formatShape, h } from "./dom.js";

/** The response's outputs keyed by name. */
export function outputsByName(response) {
  const map = new Map();
  for (const output of (response && response.outputs) || []) map.set(output.name, output);
  return map;
}

function softmax(row) {
  const m = Math.max(...row);
  const e = row.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

/**
 * Class probabilities of the first item when the model is a classifier
 * (a `probabilities` output, or `logits` alone), else null.
 * @returns {{probabilities: number[], predicted: number} | null}
 */
export function classification(response, item = 0) {
  const outputs = outputsByName(response);
  let probabilities = null;
  const pick = (output) => {
    const shape = output.shape || [];
    if (shape.length !== 2) return null;
    const k = shape[1];
    return Array.from(output.data.slice(item * k, (item + 1) * k), Number);
  };
  if (outputs.has("probabilities")) probabilities = pick(outputs.get("probabilities"));
  else if (outputs.has("logits") && outputs.size === 1) {
    const row = pick(outputs.get("logits"));
    probabilities = row && softmax(row);
  }
  if (!probabilities || probabilities.length === 0) return null;
  let predicted = 0;
  probabilities.forEach((p, i) => {
    if (p > probabilities[predicted]) predicted = i;
  });
  return { probabilities, predicted };
}

/** Predicted class in large type plus one bar per class. */
export function classificationView(result, { caption = "Predicted class" } = {}) {
  const items = result.probabilities.map((p, i) => ({ label: String(i), value: p }));
  return h(
    "div.classification",
    { dataset: { predicted: String(result.predicted) } },
    h(
      "div.prediction",
      null,
      h("span.prediction-caption", null, caption),
      h("span.prediction-class", { dataset: { testid: "predicted-class" } }, String(result.predicted)),
      h("span.prediction-confidence", null, `${(result.probabilities[result.predicted] * 100).toFixed(1)}% sure`),
    ),
    barList(items, result.predicted),
  );
}

/** One output tensor: its values when few, else statistics and a histogram. */
export function tensorView(output) {
  const data = Array.isArray(output.data) ? output.data : [];
  const numeric = data.length > 0 && typeof data[0] === "number";
  const head = h(
    "div.tensor-head",
    null,
    h("code.tensor-name", null, output.name),
    h("span.tensor-meta", null, `${output.datatype} ${formatShape(output.shape)}`),
  );
  if (!numeric) {
    return h("div.tensor", null, head, h("pre.values", null, JSON.stringify(data.slice(0, 20))));
  }
  const parts = [head];
  if (data.length <= 32) {
    parts.push(h("pre.values", null, data.map(formatNumber).join("  ")));
  } else {
    const s = summary(data);
    parts.push(
      h(
        "p.tensor-stats",
        null,
        `mean ${formatNumber(s.mean)} · std ${formatNumber(s.std)} · min ${formatNumber(s.min)} · max ${formatNumber(s.max)}`,
      ),
      histogramCanvas(histogram(data, 40), { width: 260, height: 60, label: `${output.name} values` }),
      h("pre.values", null, `${data.slice(0, 12).map(formatNumber).join("  ")}  … (${data.length} values)`),
    );
  }
  return h("div.tensor", null, parts);
}

/** The outputs of an inference response: a classification if it is one, and every tensor. */
export function outputsView(response, { caption } = {}) {
  const result = classification(response);
  const tensors = ((response && response.outputs) || []).filter((o) => !o.name.includes(":"));
  if (result) {
    return h(
      "div.outputs",
      null,
      classificationView(result, { caption }),
      h("details.raw", null, h("summary", null, "Raw outputs"), tensors.map(tensorView)),
    );
  }
  return h("div.outputs", null, tensors.map(tensorView));
}
