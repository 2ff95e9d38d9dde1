// Charts drawn on <canvas> with plain JS: colour maps, heatmaps, feature-map grids, histograms.

import { formatNumber, h } from "./dom.js";

// Viridis at 9 evenly spaced stops (perceptually uniform, readable in grey, colour-blind safe).
const VIRIDIS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];

function lerpStops(stops, t) {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = stops[i];
  const b = stops[i + 1];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}

/** Sequential colour for t in [0, 1]. */
export function viridis(t) {
  return lerpStops(VIRIDIS, t);
}

// Blue - white - red for signed values, t in [-1, 1].
const DIVERGING = [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]];
export function diverging(t) {
  return lerpStops(DIVERGING, (t + 1) / 2);
}

/**
 * The colour scale for a set of values: diverging around 0 when some are negative, else 0..max.
 * @returns {{signed: boolean, lo: number, hi: number, color: (v: number) => number[]}}
 */
export function colorScale(values) {
  const { lo, hi } = finiteRange(values) || { lo: 0, hi: 0 };
  if (lo < 0) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    return { signed: true, lo: -m, hi: m, min: lo, max: hi, color: (v) => diverging(v / m) };
  }
  const top = hi > 0 ? hi : 1;
  return { signed: false, lo: 0, hi: top, min: lo, max: hi, color: (v) => viridis(v / top) };
}

/**
 * Paint `values` (row-major rows x cols, starting at `offset`) onto a canvas of that pixel size.
 * @returns {HTMLCanvasElement}
 */
export function heatmapCanvas(values, rows, cols, scale, offset = 0, label = "heatmap") {
  const canvas = h("canvas.heatmap", { width: cols, height: rows, role: "img", "aria-label": label });
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(cols, rows);
  const n = rows * cols;
  for (let i = 0; i < n; i += 1) {
    const v = values[offset + i];
    const [r, g, b] = Number.isFinite(v) ? scale.color(v) : [255, 0, 255];
    image.data[4 * i] = r;
    image.data[4 * i + 1] = g;
    image.data[4 * i + 2] = b;
    image.data[4 * i + 3] = 255;
  }
  ctx.putImageData(image, 0, 0);
  return canvas;
}

/** A horizontal colour bar with the scale's ends labelled. */
export function colorLegend(scale) {
  const canvas = h("canvas.legend-bar", { width: 128, height: 1, "aria-hidden": "true" });
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(128, 1);
  for (let i = 0; i < 128; i += 1) {
    const v = scale.lo + ((scale.hi - scale.lo) * i) / 127;
    const [r, g, b] = scale.color(v);
    image.data.set([r, g, b, 255], 4 * i);
  }
  ctx.putImageData(image, 0, 0);
  return h(
    "div.legend",
    null,
    h("span", null, formatNumber(scale.lo)),
    canvas,
    h("span", null, formatNumber(scale.hi)),
    h("span.legend-note", null, scale.signed ? "blue < 0 < red" : "dark = 0, yellow = max"),
  );
}

/**
 * A grid of C small heatmaps: the channels of one (C, H, W) feature map.
 * @param {ArrayLike<number>} values - the whole tensor, row-major.
 * @param {number} offset - where the (C, H, W) block starts.
 */
export function featureMapGrid(values, channels, height, width, offset = 0, { limit = 256, name = "" } = {}) {
  const shown = Math.min(channels, limit);
  const block = sliceOf(values, offset, channels * height * width);
  const scale = colorScale(block);
  const cells = [];
  for (let c = 0; c < shown; c += 1) {
    const canvas = heatmapCanvas(block, height, width, scale, c * height * width, `${name} channel ${c}`);
    cells.push(h("figure.fmap", { dataset: { channel: String(c) } }, canvas, h("figcaption", null, String(c))));
  }
  const grid = h("div.fmap-grid", { dataset: { channels: String(channels) } }, cells);
  if (height * width <= 16) grid.classList.add("fmap-grid-tiny");
  const note = shown < channels ? h("p.note", null, `First ${shown} of ${channels} channels.`) : null;
  return h("div", null, colorLegend(scale), grid, note);
}

/** The smallest and largest finite values: {lo, hi}, or null when there are none. */
function finiteRange(values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return Number.isFinite(lo) ? { lo, hi } : null;
}

function sliceOf(values, offset, length) {
  return Array.prototype.slice.call(values, offset, offset + length);
}

/** Equal-width histogram of finite values: {counts, edges}. */
export function histogram(values, bins = 30) {
  const range = finiteRange(values);
  if (!range) return { counts: new Array(bins).fill(0), edges: [] };
  let { lo, hi } = range;
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const counts = new Array(bins).fill(0);
  for (const v of values) {
    if (Number.isFinite(v)) counts[Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))] += 1;
  }
  const edges = Array.from({ length: bins + 1 }, (_, i) => lo + ((hi - lo) * i) / bins);
  return { counts, edges };
}

/** Mean, std, min, max and the fraction of zeros of finite values. */
export function summary(values) {
  let n = 0;
  let sum = 0;
  let sq = 0;
  let zeros = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    n += 1;
    sum += v;
    sq += v * v;
    if (v === 0) zeros += 1;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const mean = n ? sum / n : NaN;
  const std = n ? Math.sqrt(Math.max(0, sq / n - mean * mean)) : NaN;
  return { count: values.length, mean, std, min: n ? lo : NaN, max: n ? hi : NaN, zero_fraction: n ? zeros / n : NaN };
}

/**
 * A histogram drawn on a canvas (bars, baseline, range labels), sized for its CSS box.
 * @param {{counts: number[], edges: number[]}} hist
 */
export function histogramCanvas(hist, { width = 240, height = 64, label = "histogram", compact = false } = {}) {
  const ratio = window.devicePixelRatio || 1;
  const canvas = h("canvas.histogram", {
    width: Math.round(width * ratio),
    height: Math.round(height * ratio),
    role: "img",
    "aria-label": describeHistogram(hist, label),
  });
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  const counts = hist.counts || [];
  const edges = hist.edges || [];
  const labelHeight = compact ? 0 : 14;
  const plotHeight = height - labelHeight - 2;
  const peak = Math.max(1, ...counts);
  const barWidth = width / Math.max(1, counts.length);
  ctx.fillStyle = "#f1f5f9";
  ctx.fillRect(0, 0, width, plotHeight);
  ctx.fillStyle = "#2563eb";
  counts.forEach((count, i) => {
    const barHeight = count > 0 ? Math.max(1, (count / peak) * (plotHeight - 2)) : 0;
    ctx.fillRect(i * barWidth + 0.5, plotHeight - barHeight, Math.max(1, barWidth - 1), barHeight);
  });
  if (edges.length > 1) {
    const lo = edges[0];
    const hi = edges[edges.length - 1];
    if (lo < 0 && hi > 0) {
      const x = ((0 - lo) / (hi - lo)) * width;
      ctx.fillStyle = "#b91c1c";
      ctx.fillRect(Math.round(x) - 0.5, 0, 1, plotHeight);
    }
    if (!compact) {
      ctx.fillStyle = "#334155";
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "bottom";
      ctx.textAlign = "left";
      ctx.fillText(formatNumber(lo), 0, height);
      ctx.textAlign = "right";
      ctx.fillText(formatNumber(hi), width, height);
    }
  }
  ctx.fillStyle = "#94a3b8";
  ctx.fillRect(0, plotHeight, width, 1);
  return canvas;
}

function describeHistogram(hist, label) {
  const edges = hist.edges || [];
  const total = (hist.counts || []).reduce((a, b) => a + b, 0);
  if (edges.length < 2) return `${label}: no finite values`;
  return `${label}: ${total} values from ${formatNumber(edges[0])} to ${formatNumber(edges[edges.length - 1])}`;
}

/**
 * Labelled horizontal bars (class probabilities, similarities): readable as text too.
 * @param {{label: string, value: number}[]} items - values in [0, 1].
 * @param {number} highlight - index of the bar to emphasise (or -1).
 */
export function barList(items, highlight = -1, { percent = true } = {}) {
  return h(
    "ol.bars",
    null,
    items.map((item, i) => {
      const bar = h("span.bar-fill");
      bar.style.width = `${Math.max(0, Math.min(1, item.value)) * 100}%`;
      return h(
        "li.bar-row" + (i === highlight ? ".bar-top" : ""),
        { dataset: { label: item.label, value: String(item.value) } },
        h("span.bar-label", null, item.label),
        h("span.bar-track", { "aria-hidden": "true" }, bar),
        h("span.bar-value", null, percent ? `${(item.value * 100).toFixed(1)}%` : formatNumber(item.value)),
      );
    }),
  );
}
