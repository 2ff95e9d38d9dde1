// The models page: every model in the repository with readiness, versions, architecture,
// device, dtype, parameter count and size.

import { modelConfig, modelMetadata, parameters, repositoryIndex } from "./api.js";
import { errorBox, formatBytes, formatCount, h, replace } from "./dom.js";

/** A READY / UNAVAILABLE / LOADING badge. */
export function stateBadge(state) {
  const kind = state === "READY" ? "ok" : state === "LOADING" ? "busy" : "bad";
  return h(`span.badge.badge-${kind}`, null, state || "UNKNOWN");
}

async function details(entry) {
  const [meta, config, params] = await Promise.allSettled([
    modelMetadata(entry.name),
    entry.state === "READY" ? modelConfig(entry.name) : Promise.reject(new Error("not ready")),
    entry.state === "READY" ? parameters(entry.name) : Promise.reject(new Error("not ready")),
  ]);
  const value = (r) => (r.status === "fulfilled" ? r.value : null);
  return { entry, meta: value(meta), config: value(config), params: value(params) };
}

function modelRow({ entry, meta, config, params }) {
  const mininn = (config && config.mininn) || {};
  const versions = meta ? meta.versions : [entry.version];
  const reason = entry.reason || (meta && meta.reason);
  const totals = params && params.totals;
  return h(
    "tr",
    { dataset: { model: entry.name, state: entry.state } },
    h(
      "th",
      { scope: "row", "data-label": "Model" },
      h(
        "div",
        null,
        h("a.model-link", { href: `/ui/models/${encodeURIComponent(entry.name)}` }, entry.name),
        mininn.description ? h("div.row-note", null, mininn.description) : null,
      ),
    ),
    h(
      "td",
      { "data-label": "State" },
      h("div", null, stateBadge(entry.state), reason ? h("div.reason", { dataset: { testid: "reason" } }, reason) : null),
    ),
    h("td", { "data-label": "Versions" }, (versions || []).join(", ") || "–"),
    h("td", { "data-label": "Architecture" },
      (meta && (meta.architecture || meta.module)) || mininn.architecture || mininn.module || "–"),
    h("td", { "data-label": "Device" }, mininn.device || "–"),
    h("td", { "data-label": "Dtype" }, mininn.dtype || "–"),
    h("td.num", { "data-label": "Parameters" }, totals ? formatCount(totals.parameter_elements) : "–"),
    h("td.num", { "data-label": "Size" }, totals ? formatBytes(totals.parameter_bytes + totals.buffer_bytes) : "–"),
  );
}

/** Render the models page into `main`. */
export async function modelsPage(main) {
  document.title = "Models · mininn model explorer";
  const status = h("p.status-line", { role: "status" }, "Loading the repository…");
  const body = h("div");
  const refresh = h("button", { type: "button", onclick: () => load() }, "Refresh");
  replace(
    main,
    h("div.page-head", null, h("h1", null, "Models"), refresh),
    h("p.lead", null, "Every model in the repository. Open one to see its modules and parameters, try it, look at its activations, or upload new weights."),
    status,
    body,
  );
  async function load() {
    status.textContent = "Loading the repository…";
    try {
      const index = await repositoryIndex();
      const rows = await Promise.all(index.map(details));
      const ready = rows.filter((r) => r.entry.state === "READY").length;
      status.textContent = `${rows.length} model${rows.length === 1 ? "" : "s"}, ${ready} ready.`;
      replace(
        body,
        rows.length
          ? h(
              "div.table-scroll",
              null,
              h(
                "table.data-table.models-table",
                { dataset: { testid: "models-table" } },
                h("caption.visually-hidden", null, "Models in the repository"),
                h(
                  "thead",
                  null,
                  h(
                    "tr",
                    null,
                    ["Model", "State", "Versions", "Architecture", "Device", "Dtype", "Parameters", "Size"].map((t) =>
                      h("th", { scope: "col" }, t),
                    ),
                  ),
                ),
                h("tbody", null, rows.map(modelRow)),
              ),
            )
          : h("p.note", null, "The repository is empty."),
      );
      main.dataset.loaded = "true";
    } catch (error) {
      status.textContent = "";
      replace(body, errorBox(error, "Could not list the models"));
      main.dataset.loaded = "true";
    }
  }
  await load();
}
