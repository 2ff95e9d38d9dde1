// Upload a state dict as a new version: PUT /v2/models/{m}/state_dict with the API key typed here.
// The key lives only in this form's input (page memory): never in storage, cookies or the URL.

import { uploadStateDict } from "./api.js";
import { errorBox, h, labelled, replace, uniqueId } from "./dom.js";

const KEY_LISTS = [
  ["missing_keys", "Missing keys", /Missing key\(s\) in state_dict: (.*?)\.\s*(?:$|\n|Unexpected|size mismatch)/s],
  ["unexpected_keys", "Unexpected keys", /Unexpected key\(s\) in state_dict: (.*?)\.\s*(?:$|\n|Missing|size mismatch)/s],
];

/**
 * The key problems of an upload, from the response body's lists (missing_keys, unexpected_keys,
 * size_mismatches, dtype_mismatches), else from torch's message format in the error text.
 * @returns {{missing: string[], unexpected: string[], mismatched: string[]}} - mismatches as
 *   "key: checkpoint [..] vs model [..]" lines.
 */
export function keyProblems(body, message) {
  const text = message || "";
  const list = (name) => (body && Array.isArray(body[name]) ? body[name] : null);
  const quoted = (s) => Array.from(s.matchAll(/"([^"]+)"/g), (m) => m[1]);
  const fromText = (re) => {
    const m = text.match(re);
    return m ? quoted(m[1]) : [];
  };
  const describe = (item) => {
    if (typeof item === "string") return item;
    if (item.checkpoint_shape) return `${item.key}: checkpoint ${shape(item.checkpoint_shape)}, model ${shape(item.model_shape)}`;
    if (item.checkpoint_dtype) return `${item.key}: checkpoint ${item.checkpoint_dtype}, model ${item.model_dtype}`;
    return item.key || JSON.stringify(item);
  };
  const missing = list("missing_keys") || fromText(KEY_LISTS[0][2]);
  const unexpected = list("unexpected_keys") || fromText(KEY_LISTS[1][2]);
  const sizes = list("size_mismatches");
  const dtypes = list("dtype_mismatches") || [];
  const mismatched = sizes
    ? [...sizes, ...dtypes].map(describe)
    : Array.from(text.matchAll(/size mismatch for ([^:\s]+):/g), (m) => m[1]);
  return { missing: missing.map(describe), unexpected: unexpected.map(describe), mismatched };
}

function shape(dims) {
  return `[${(dims || []).join(", ")}]`;
}

function keyList(title, keys, testid) {
  if (!keys.length) return null;
  return h(
    "div.key-list",
    { dataset: { testid } },
    h("h4", null, `${title} (${keys.length})`),
    h("ul", null, keys.map((k) => h("li", null, h("code", null, k)))),
  );
}

/**
 * The upload form.
 * @param {{name: string}} model
 * @param {(version: string|null) => void} onUploaded - called after a successful upload.
 */
export function uploadForm(model, onUploaded) {
  const key = h("input", { id: uniqueId("key"), type: "password", autocomplete: "off", spellcheck: "false", dataset: { testid: "upload-key" } });
  const file = h("input", { id: uniqueId("file"), type: "file", accept: ".safetensors,.npz,.pt,.pth,.bin", required: true, dataset: { testid: "upload-file" } });
  const strict = h("input", { id: uniqueId("strict"), type: "checkbox", checked: true, dataset: { testid: "upload-strict" } });
  const submit = h("button.primary", { type: "submit" }, "Upload");
  const result = h("div.result", { "aria-live": "polite", dataset: { testid: "upload-result" } });

  async function send(event) {
    event.preventDefault();
    const chosen = file.files && file.files[0];
    if (!chosen) {
      replace(result, errorBox(new Error("choose a checkpoint file first")));
      return;
    }
    submit.disabled = true;
    result.dataset.status = "pending";
    replace(result, h("p.note", null, `Uploading ${chosen.name} (${chosen.size.toLocaleString("en-US")} bytes)…`));
    try {
      const response = await uploadStateDict(model.name, chosen, { key: key.value, strict: strict.checked });
      const version = response && (response.model_version ?? response.version ?? null);
      const problems = keyProblems(response, "");
      const filled = response && response.filled_from_version;
      const initialised = (response && response.initialized_keys) || [];
      replace(
        result,
        h(
          "div.success-box",
          { role: "status", dataset: { version: version === null ? "" : String(version) } },
          h("strong", null, version === null ? "Uploaded." : `Uploaded as version ${version}.`),
          response && response.served === false
            ? ` It is stored but not served (${response.state}${response.reason ? `: ${response.reason}` : ""}).`
            : " It serves from now on.",
          keyList(filled ? `Missing keys (values kept from version ${filled})` : "Missing keys", problems.missing, "upload-missing"),
          initialised.length ? keyList("Missing keys left at their initialization", initialised, "upload-initialized") : null,
          keyList("Unexpected keys (ignored)", problems.unexpected, "upload-unexpected"),
        ),
      );
      result.dataset.status = "done";
      onUploaded(version === null ? null : String(version));
    } catch (error) {
      const problems = keyProblems(error.body, error.message);
      replace(
        result,
        errorBox(error, "Upload refused"),
        keyList("Missing keys", problems.missing, "upload-missing"),
        keyList("Unexpected keys", problems.unexpected, "upload-unexpected"),
        keyList("Shape or dtype mismatches", problems.mismatched, "upload-mismatched"),
        h("p.note", null, "Nothing changed: the model serves the same version as before."),
      );
      result.dataset.status = "error";
    } finally {
      submit.disabled = false;
    }
  }

  return h(
    "div.upload",
    null,
    h(
      "form.upload-form",
      { onsubmit: send, dataset: { testid: "upload-form" } },
      labelled("API key", key),
      h("p.hint", null, "Sent only in this upload’s Authorization header; kept in this page’s memory, never stored."),
      labelled("State dict (.safetensors, .npz, .pt/.pth)", file),
      h("div.check-row", null, strict, h("label", { for: strict.id }, "Strict: every key must match the model")),
      h("div.controls", null, submit),
    ),
    result,
  );
}
