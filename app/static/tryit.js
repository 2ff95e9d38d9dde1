// The try-it panel, chosen from the model's declared inputs: a drawing canvas for one-channel
// images, two sentences for a text model, and a JSON tensor editor for everything else.
//
// Each panel is {kind, element, getInputs(), preview(), onChange(listener)}: getInputs() returns
// the V2 "inputs" list of the current input (or throws an Error naming what is wrong), which the
// activation explorer reuses.

import { infer } from "./api.js";
import { barList } from "./charts.js";
import { errorBox, formatNumber, formatShape, h, labelled, replace, uniqueId } from "./dom.js";
import { canvasGrey, strokeDigit, toMnist } from "./mnist.js";
import { outputsView } from "./outputs.js";

const FLOAT_TYPES = new Set(["FP16", "FP32", "FP64"]);

/** Which panel suits these inputs: "digits", "text" or "tensor". */
export function panelKind(inputs) {
  if (inputs.length === 1) {
    const [input] = inputs;
    const s = input.shape || [];
    if (FLOAT_TYPES.has(input.datatype) && s.length === 4 && s[1] === 1 && s[2] > 0 && s[3] > 0) return "digits";
    if (input.datatype === "BYTES" && s.length === 1) return "text";
  }
  return "tensor";
}

/** Build the panel for a model. */
export function createInputPanel(model) {
  const kind = panelKind(model.metadata.inputs || []);
  if (kind === "digits") return digitsPanel(model);
  if (kind === "text") return textPanel(model);
  return tensorPanel(model);
}

/** A panel: what the page shows, and what the activation explorer reads. */
function panel(kind, element, getInputs, changed, preview) {
  return { kind, element, getInputs, onChange: changed.add, preview };
}

function listeners() {
  const list = [];
  return { add: (f) => list.push(f), fire: () => list.forEach((f) => f()) };
}

/**
 * Infers the model on the panel's current inputs and shows `render(response)` in `view`; inputs
 * that `getInputs()` refuses are shown there as an error, without a request.
 */
function inferrer(view, model, getInputs, render) {
  const run = runner(view);
  return () => {
    let inputs;
    try {
      inputs = getInputs();
    } catch (error) {
      replace(view, errorBox(error));
      return undefined;
    }
    return run(() => infer(model.name, { inputs }), render);
  };
}

/** Runs requests so that only the latest answer is shown, and marks the view's state for tests. */
function runner(view) {
  let seq = 0;
  return async (makeRequest, render) => {
    seq += 1;
    const mine = seq;
    view.dataset.status = "pending";
    view.dataset.seq = String(mine);
    view.setAttribute("aria-busy", "true");
    try {
      const response = await makeRequest();
      if (mine !== seq) return;
      replace(view, render(response));
      view.dataset.status = "done";
    } catch (error) {
      if (mine !== seq) return;
      replace(view, errorBox(error, "Inference failed"));
      view.dataset.status = "error";
    } finally {
      if (mine === seq) view.removeAttribute("aria-busy");
    }
  };
}

// ---- digits: draw on a canvas ------------------------------------------------------------
function digitsPanel(model) {
  const spec = model.metadata.inputs[0];
  const size = spec.shape[2];
  const width = spec.shape[3];
  const box = Math.round((Math.min(size, width) * 20) / 28);
  const changed = listeners();
  const hintId = uniqueId("draw-hint");
  const draw = h("canvas.draw", {
    width: 280,
    height: 280,
    tabindex: "0",
    role: "img",
    "aria-label": "Drawing area for a digit",
    "aria-describedby": hintId,
    dataset: { testid: "draw-canvas" },
  });
  const ctx = draw.getContext("2d");
  const seen = h("canvas.seen", { width, height: size, role: "img", "aria-label": `The ${size}×${width} image the model sees` });
  const result = h("div.result", { "aria-live": "polite", dataset: { testid: "digit-result" } }, h("p.note", null, "Draw a digit."));
  const inferDrawing = inferrer(result, model, getInputs, (response) => outputsView(response, { caption: "The model reads" }));
  let tensor = new Float32Array(size * width);

  function clear() {
    ctx.fillStyle = "#000";
    ctx.fillRect(0, 0, draw.width, draw.height);
    ctx.strokeStyle = "#fff";
    ctx.lineWidth = 22;
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
  }
  function refresh() {
    const grey = canvasGrey(draw);
    tensor = resize(toMnist(grey, draw.height, draw.width, { size: Math.max(size, width), box }), size, width);
    const sctx = seen.getContext("2d");
    const image = sctx.createImageData(width, size);
    tensor.forEach((v, i) => image.data.set([v * 255, v * 255, v * 255, 255], 4 * i));
    sctx.putImageData(image, 0, 0);
    changed.fire();
  }
  function predict() {
    refresh();
    return inferDrawing();
  }
  function stamp(d) {
    clear();
    strokeDigit(ctx, d, 80, 50, 120, 180);
    predict();
  }
  function getInputs() {
    const data = Array.from(tensor, (v) => Math.round(v * 10000) / 10000);
    return [{ name: spec.name, datatype: spec.datatype, shape: [1, 1, size, width], data }];
  }

  let drawing = false;
  const point = (event) => {
    const rect = draw.getBoundingClientRect();
    return [((event.clientX - rect.left) * draw.width) / rect.width, ((event.clientY - rect.top) * draw.height) / rect.height];
  };
  draw.addEventListener("pointerdown", (event) => {
    drawing = true;
    draw.setPointerCapture(event.pointerId);
    const [x, y] = point(event);
    ctx.beginPath();
    ctx.moveTo(x, y);
    ctx.lineTo(x + 0.01, y);
    ctx.stroke();
    event.preventDefault();
  });
  draw.addEventListener("pointermove", (event) => {
    if (!drawing) return;
    const [x, y] = point(event);
    ctx.lineTo(x, y);
    ctx.stroke();
  });
  const finish = () => {
    if (!drawing) return;
    drawing = false;
    predict();
  };
  draw.addEventListener("pointerup", finish);
  draw.addEventListener("pointercancel", finish);
  draw.addEventListener("keydown", (event) => {
    if (/^[0-9]$/.test(event.key)) {
      stamp(Number(event.key));
      event.preventDefault();
    } else if (["Escape", "Delete", "Backspace"].includes(event.key)) {
      clear();
      refresh();
      event.preventDefault();
    }
  });

  const exampleId = uniqueId("example");
  const example = h(
    "select",
    { id: exampleId, dataset: { testid: "example-digit" } },
    h("option", { value: "" }, "choose…"),
    Array.from({ length: 10 }, (_, d) => h("option", { value: String(d) }, String(d))),
  );
  example.addEventListener("change", () => {
    if (example.value !== "") stamp(Number(example.value));
  });

  clear();
  const element = h(
    "div.tryit.tryit-digits",
    null,
    h(
      "div.draw-column",
      null,
      draw,
      h(
        "div.controls",
        null,
        h("button", { type: "button", onclick: () => { clear(); refresh(); replace(result, h("p.note", null, "Draw a digit.")); } }, "Clear"),
        h("button.primary", { type: "button", onclick: predict }, "Predict"),
        h("span.example-pick", null, h("label.inline", { for: exampleId }, "Example digit"), example),
      ),
      h("p.hint", { id: hintId }, "Draw a digit with the mouse, a pen or a finger. Keyboard: focus the drawing and press 0–9 to draw that digit, Escape to clear."),
    ),
    h(
      "div.seen-column",
      null,
      h("h3", null, "What the model sees"),
      seen,
      h("p.note", null, `${size}×${width}, grey, white on black, scaled into a ${box}×${box} box and centred by mass, like MNIST.`),
    ),
    h("div.result-column", null, h("h3", null, "Prediction"), result),
  );
  stamp(3);
  return panel("digits", element, getInputs, changed, () => {
    const copy = h("canvas.seen.seen-small", { width, height: size, role: "img", "aria-label": "The input image" });
    copy.getContext("2d").drawImage(seen, 0, 0);
    return h("div.input-preview", null, copy, h("span", null, "The drawing from “Try it”."));
  });
}

function resize(square, rows, cols) {
  const side = Math.sqrt(square.length);
  if (side === rows && side === cols) return square;
  const out = new Float32Array(rows * cols);
  for (let y = 0; y < rows; y += 1) for (let x = 0; x < cols; x += 1) out[y * cols + x] = square[y * side + x];
  return out;
}

// ---- text: two sentences -------------------------------------------------------------------
function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i += 1) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : NaN;
}

function textPanel(model) {
  const spec = model.metadata.inputs[0];
  const embedding = (model.metadata.outputs || []).find((o) => FLOAT_TYPES.has(o.datatype) && (o.shape || []).length === 2);
  const changed = listeners();
  const boxes = [
    h("textarea", { id: uniqueId("sentence"), rows: "3", dataset: { testid: "sentence-a" } }, "A cat is sleeping on the sofa."),
    h("textarea", { id: uniqueId("sentence"), rows: "3", dataset: { testid: "sentence-b" } }, "A kitten naps on the couch."),
  ];
  boxes.forEach((box) => box.addEventListener("input", changed.fire));
  const result = h("div.result", { "aria-live": "polite", dataset: { testid: "text-result" } });
  const compare = inferrer(result, model, getInputs, render);

  function getInputs() {
    const texts = boxes.map((b) => b.value.trim());
    if (texts.some((t) => !t)) throw new Error("write both sentences");
    return [{ name: spec.name, datatype: "BYTES", shape: [2], data: texts }];
  }
  function render(response) {
    const out = embedding && (response.outputs || []).find((o) => o.name === embedding.name);
    if (!out) return outputsView(response);
    const d = out.shape[1];
    const a = out.data.slice(0, d);
    const b = out.data.slice(d, 2 * d);
    const similarity = cosine(a, b);
    return h(
      "div.similarity",
      { dataset: { similarity: String(similarity) } },
      h("p.big-number", null, h("span.prediction-caption", null, "Cosine similarity"), h("span.prediction-class", null, similarity.toFixed(3))),
      barList([{ label: "A·B", value: Math.max(0, similarity) }], 0, { percent: false }),
      h("p.note", null, `Each sentence becomes a ${d}-dimensional ${embedding.name} (norms ${formatNumber(norm(a))}, ${formatNumber(norm(b))}).`),
      outputsView(response),
    );
  }
  const element = h(
    "div.tryit.tryit-text",
    null,
    h(
      "div.text-column",
      null,
      labelled("Sentence A", boxes[0]),
      labelled("Sentence B", boxes[1]),
      h("div.controls", null, h("button.primary", { type: "button", onclick: compare }, "Compare")),
      h("p.hint", null, `Both sentences go in one request as a BYTES tensor “${spec.name}” of shape [2].`),
    ),
    h("div.result-column", null, h("h3", null, "Similarity"), result),
  );
  compare();
  const preview = () => h("div.input-preview", null, h("span", null, `“${boxes[0].value}” and “${boxes[1].value}”`));
  return panel("text", element, getInputs, changed, preview);
}

function norm(v) {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

// ---- generic: a JSON editor per input --------------------------------------------------------
function numel(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

function randomValues(n, datatype) {
  let state = 12345;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  if (datatype === "BOOL") return Array.from({ length: n }, () => next() < 0.5);
  if (datatype.startsWith("INT") || datatype.startsWith("UINT")) return Array.from({ length: n }, () => Math.floor(next() * 10));
  return Array.from({ length: n }, () => Math.round((next() * 2 - 1) * 1000) / 1000);
}

function fill(kind, n, datatype) {
  if (datatype === "BYTES") return Array.from({ length: n }, () => "hello");
  if (kind === "random") return randomValues(n, datatype);
  const value = kind === "ones" ? 1 : 0;
  return Array.from({ length: n }, () => (datatype === "BOOL" ? Boolean(value) : value));
}

const EDIT_LIMIT = 4096; // above this many elements the editor holds "random" instead of numbers

function tensorPanel(model) {
  const changed = listeners();
  const editors = (model.metadata.inputs || []).map((spec) => {
    const shape = (spec.shape || []).map((d) => (d < 0 ? 1 : d));
    const shapeInput = h("input", { id: uniqueId("shape"), type: "text", value: shape.join(", "), spellcheck: "false", dataset: { testid: `shape-${spec.name}` } });
    const n = numel(shape);
    const initial = n > EDIT_LIMIT ? JSON.stringify("random") : JSON.stringify(fill("random", n, spec.datatype));
    const values = h("textarea.code", { id: uniqueId("values"), rows: "5", spellcheck: "false", dataset: { testid: `values-${spec.name}` } }, initial);
    const setFill = (kind) => {
      let count;
      try {
        count = numel(parseShape(shapeInput.value, spec.name));
      } catch (error) {
        replace(result, errorBox(error));
        return;
      }
      values.value = count > EDIT_LIMIT ? JSON.stringify(kind) : JSON.stringify(fill(kind, count, spec.datatype));
      changed.fire();
    };
    shapeInput.addEventListener("input", changed.fire);
    values.addEventListener("input", changed.fire);
    const element = h(
      "fieldset.tensor-editor",
      null,
      h("legend", null, h("code", null, spec.name), ` ${spec.datatype} ${formatShape(spec.shape)}`),
      labelled("Shape", shapeInput),
      labelled("Values: JSON, flat or nested, or \"zeros\", \"ones\", \"random\"", values),
      h(
        "div.controls",
        null,
        h("button", { type: "button", onclick: () => setFill("zeros") }, "Zeros"),
        h("button", { type: "button", onclick: () => setFill("ones") }, "Ones"),
        h("button", { type: "button", onclick: () => setFill("random") }, "Random"),
      ),
    );
    return { spec, element, shapeInput, values };
  });
  const result = h("div.result", { "aria-live": "polite", dataset: { testid: "tensor-result" } });
  const submit = inferrer(result, model, getInputs, (response) => outputsView(response));

  function getInputs() {
    return editors.map(({ spec, shapeInput, values }) => {
      const shape = parseShape(shapeInput.value, spec.name);
      let parsed;
      try {
        parsed = JSON.parse(values.value);
      } catch (error) {
        throw new Error(`values of ${spec.name} are not valid JSON: ${error.message}`);
      }
      const n = numel(shape);
      const data = typeof parsed === "string" ? fillNamed(parsed, n, spec) : [parsed].flat(Infinity);
      if (data.length !== n) throw new Error(`${spec.name} has ${data.length} values; shape ${formatShape(shape)} needs ${n}`);
      return { name: spec.name, datatype: spec.datatype, shape, data };
    });
  }
  const element = h(
    "div.tryit.tryit-tensor",
    null,
    h(
      "div.editor-column",
      null,
      editors.length ? editors.map((e) => e.element) : h("p.note", null, "The model declares no inputs."),
      h("div.controls", null, h("button.primary", { type: "button", onclick: submit }, "Run")),
    ),
    h("div.result-column", null, h("h3", null, "Outputs"), result),
  );
  submit();
  return panel("tensor", element, getInputs, changed, () => h("div.input-preview", null, h("span", null, "The tensors from “Try it”.")));
}

function fillNamed(kind, n, spec) {
  if (!["zeros", "ones", "random"].includes(kind)) {
    throw new Error(`values of ${spec.name}: use a JSON array or "zeros", "ones", "random", not ${JSON.stringify(kind)}`);
  }
  return fill(kind, n, spec.datatype);
}

function parseShape(text, name) {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  const shape = parts.map(Number);
  if (!parts.length || shape.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new Error(`shape of ${name} must be non-negative integers separated by commas, got "${text}"`);
  }
  return shape;
}
