// The steer tab of a language model: the plain and the steered answer to one message, streamed side
// by side (POST /v1/chat/completions twice, the second with a stored steering vector), and a form
// that computes a vector from contrasting examples (POST .../steering/{name}/compute, write key).
// The key lives only in its input (page memory), as in the upload form.

import { ApiError, api, modelPath } from "./api.js";
import { errorBox, h, labelled, replace, uniqueId } from "./dom.js";

const listVectors = (name) => api(`${modelPath(name)}/steering`);

/** The text of an OpenAI-style or V2 error body. */
function errorText(body, fallback) {
  if (body && typeof body.error === "string") return body.error;
  if (body && body.error && typeof body.error.message === "string") return body.error.message;
  return fallback;
}

/** Stream a chat completion; `onText(delta)` for each piece of text. */
async function streamChat(model, message, maxTokens, steering, onText) {
  const body = { model, messages: [{ role: "user", content: message }], stream: true, temperature: 0, max_tokens: maxTokens };
  if (steering) body.steering = steering;
  let response;
  try {
    response = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, `cannot reach the server (${error.message})`, null);
  }
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new ApiError(response.status, errorText(data, response.statusText), data);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of frame.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") return;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new ApiError(500, errorText(chunk, "the generation failed"), chunk);
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (delta && delta.content) onText(delta.content);
      }
    }
  }
}

function answerBox(title, testid) {
  const text = h("div.answer-text", { dataset: { testid }, "aria-live": "polite" });
  return { element: h("div.answer", null, h("h3", null, title), text), text };
}

/** Run one answer into `box`; its data-status goes running -> done (or error). */
async function runAnswer(box, run) {
  box.text.dataset.status = "running";
  replace(box.text);
  try {
    await run((delta) => box.text.append(delta));
    box.text.dataset.status = "done";
  } catch (error) {
    replace(box.text, errorBox(error));
    box.text.dataset.status = "error";
  }
}

function compareForm(model, vectors) {
  const message = h("textarea", { id: uniqueId("steer-message"), rows: 2, dataset: { testid: "steer-message" } }, "Tell me about your weekend.");
  const vector = h("select", { id: uniqueId("steer-vector"), dataset: { testid: "steer-vector" } });
  const layer = h("select", { id: uniqueId("steer-layer"), dataset: { testid: "steer-layer" } });
  const scale = h("input", { id: uniqueId("steer-scale"), type: "range", min: "-12", max: "12", step: "0.5", value: "6", dataset: { testid: "steer-scale" } });
  const scaleValue = h("output", { for: scale.id, dataset: { testid: "steer-scale-value" } }, scale.value);
  const tokens = h("input", { id: uniqueId("steer-tokens"), type: "number", min: "1", max: "512", value: "32", dataset: { testid: "steer-max-tokens" } });
  const plain = answerBox("Plain", "steer-plain");
  const steered = answerBox("Steered", "steer-steered");
  const status = h("p.note", { role: "status" });

  function fillLayers() {
    const chosen = vectors.list.find((v) => v.name === vector.value);
    replace(layer, h("option", { value: "" }, "all of the vector's modules"), (chosen ? chosen.modules : []).map((m) => h("option", { value: m }, m)));
  }
  function fillVectors(selected) {
    replace(vector, vectors.list.map((v) => h("option", { value: v.name }, v.name)));
    if (selected) vector.value = selected;
    fillLayers();
    status.textContent = vectors.list.length ? "" : "No stored vectors yet: compute one below, or PUT one to the steering route.";
  }
  vector.addEventListener("change", fillLayers);
  scale.addEventListener("input", () => (scaleValue.textContent = scale.value));

  const button = h("button.primary", { type: "submit", dataset: { testid: "steer-compare" } }, "Compare");
  const form = h(
    "form.steer-form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        const steering = vector.value
          ? [{ name: vector.value, scale: Number(scale.value), ...(layer.value ? { modules: [layer.value] } : {}) }]
          : null;
        const maxTokens = Number(tokens.value) || 32;
        button.disabled = true;
        await Promise.all([
          runAnswer(plain, (onText) => streamChat(model.name, message.value, maxTokens, null, onText)),
          runAnswer(steered, (onText) => streamChat(model.name, message.value, maxTokens, steering, onText)),
        ]);
        button.disabled = false;
      },
    },
    h("div.field", null, labelled("Message", message)),
    h("div.field-row", null, h("div.field", null, labelled("Vector", vector)), h("div.field", null, labelled("Layer", layer))),
    h("div.field-row", null, h("div.field", null, labelled("Scale", scale), scaleValue), h("div.field", null, labelled("Max tokens", tokens))),
    button,
    status,
  );
  fillVectors();
  return { element: h("div", null, form, h("div.answers", null, plain.element, steered.element)), fillVectors };
}

function computeForm(model, vectors, onStored) {
  const name = h("input", { id: uniqueId("compute-name"), value: "joy", dataset: { testid: "compute-name" } });
  const positive = h("textarea", { id: uniqueId("compute-positive"), rows: 3, dataset: { testid: "compute-positive" } }, "I love this!\nWhat a happy day.\nThe best thing ever.");
  const negative = h("textarea", { id: uniqueId("compute-negative"), rows: 3, dataset: { testid: "compute-negative" } }, "I hate this.\nWhat a sad day.\nThe worst thing ever.");
  const first = vectors.list.length ? vectors.list[0].modules[0] : "model.layers.12";
  const layer = h("input", { id: uniqueId("compute-layer"), value: first, dataset: { testid: "compute-layer" } });
  const key = h("input", { id: uniqueId("compute-key"), type: "password", autocomplete: "off", spellcheck: "false", dataset: { testid: "compute-key" } });
  const status = h("div", { role: "status", dataset: { testid: "compute-status" } });
  const lines = (area) => area.value.split("\n").map((s) => s.trim()).filter(Boolean);
  const form = h(
    "form.compute-form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        replace(status, h("p.note", null, "Computing…"));
        status.dataset.status = "running";
        try {
          const stored = await api(`${modelPath(model.name)}/steering/${encodeURIComponent(name.value)}/compute`, {
            method: "POST",
            json: { positive: lines(positive), negative: lines(negative), modules: [layer.value], chat: true },
            headers: key.value ? { Authorization: `Bearer ${key.value}` } : {},
          });
          replace(status, h("p.note", null, `Stored “${stored.name}” (${stored.modules.join(", ")}).`));
          status.dataset.status = "done";
          await onStored(stored.name);
        } catch (error) {
          replace(status, errorBox(error, "Could not compute the vector"));
          status.dataset.status = "error";
        }
      },
    },
    h("h3", null, "Compute a vector from examples"),
    h("p.note", null, "Per layer: the mean output at the last prompt token over the positive examples minus over the negative ones (one example per line)."),
    h("div.field-row", null, h("div.field", null, labelled("Name", name)), h("div.field", null, labelled("Layer", layer))),
    h("div.field-row", null, h("div.field", null, labelled("Positive", positive)), h("div.field", null, labelled("Negative", negative))),
    h("div.field", null, labelled("API key (write)", key)),
    h("button", { type: "submit", dataset: { testid: "compute-submit" } }, "Compute and store"),
    status,
  );
  return form;
}

/** The chat tab of text model `model`. */
export async function steerTab(model) {
  const vectors = { list: (await listVectors(model.name)).vectors };
  const compare = compareForm(model, vectors);
  const compute = computeForm(model, vectors, async (stored) => {
    vectors.list = (await listVectors(model.name)).vectors;
    compare.fillVectors(stored);
  });
  return h("div.steer", null, compare.element, compute);
}
