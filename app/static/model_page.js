// A model's page: facts, then tabs for chat (text-generation models), try-it, activations, modules,
// parameters and upload.

import { modelConfig, modelMetadata, moduleTree, parameters } from "./api.js";
import { activationExplorer } from "./activations.js";
import { chatView } from "./chat.js";
import { steerTab } from "./steer.js";
import { errorBox, formatBytes, formatCount, formatShape, h, replace } from "./dom.js";
import { stateBadge } from "./models_page.js";
import { moduleTreeView } from "./module_tree.js";
import { parametersView } from "./parameters_view.js";
import { createInputPanel } from "./tryit.js";
import { uploadForm } from "./upload.js";

const TABS = [
  { id: "try", label: "Try it", needsReady: true },
  { id: "activations", label: "Activations", needsReady: true },
  { id: "modules", label: "Modules", needsReady: true },
  { id: "parameters", label: "Parameters", needsReady: true },
  { id: "upload", label: "Upload weights", needsReady: false },
];
const CHAT = { id: "chat", label: "Chat", needsReady: true };
const STEER = { id: "steer", label: "Steer", needsReady: true };

/** The config's `mininn.generation` (null: the model does not generate text). */
function generationOf(config) {
  return (config && config.mininn && config.mininn.generation) || null;
}

function tensorList(tensors) {
  if (!tensors || !tensors.length) return "–";
  return h("ul.plain", null, tensors.map((t) => h("li", null, h("code", null, t.name), ` ${t.datatype} ${formatShape(t.shape)}`)));
}

function facts(meta, config, totals) {
  const mininn = (config && config.mininn) || {};
  const item = (label, value, testid) => h("div.fact", { dataset: testid ? { testid } : undefined }, h("dt", null, label), h("dd", null, value));
  return h(
    "dl.facts",
    null,
    item("Versions", (meta.versions || []).join(", ") || "–", "versions"),
    item("Architecture", meta.architecture || meta.module || "–"),
    item("Device", mininn.device || "–"),
    item("Dtype", mininn.dtype || "–"),
    item("Parameters", totals ? formatCount(totals.parameter_elements) : "–"),
    item("Size", totals ? formatBytes(totals.parameter_bytes + totals.buffer_bytes) : "–"),
    item("Inputs", tensorList(meta.inputs)),
    item("Outputs", tensorList(meta.outputs)),
  );
}

async function loadFacts(name) {
  const meta = await modelMetadata(name);
  const ready = meta.state === "READY";
  const [config, params] = ready
    ? await Promise.all([modelConfig(name).catch(() => null), parameters(name).catch(() => null)])
    : [null, null];
  return { meta, config, totals: params && params.totals };
}

/** A keyboard-usable tab strip (arrow keys, Home, End) over lazily built panels. */
function tabs(items, onShow) {
  const buttons = [];
  const panels = [];
  const list = h("div.tabs", { role: "tablist", "aria-label": "Model views" });
  items.forEach((item, i) => {
    const button = h(
      "button.tab",
      { type: "button", role: "tab", id: `tab-${item.id}`, "aria-controls": `panel-${item.id}`, "aria-selected": "false", tabindex: "-1", dataset: { tab: item.id } },
      item.label,
    );
    const panel = h("section.tab-panel", { role: "tabpanel", id: `panel-${item.id}`, "aria-labelledby": `tab-${item.id}`, hidden: true, tabindex: "0" });
    button.addEventListener("click", () => show(item.id, true));
    button.addEventListener("keydown", (event) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: items.length - 1 };
      if (event.key in moves) {
        const next = items[(moves[event.key] + items.length) % items.length];
        show(next.id, true);
        document.getElementById(`tab-${next.id}`).focus();
        event.preventDefault();
      }
    });
    buttons.push(button);
    panels.push(panel);
    list.append(button);
  });
  function show(id, remember) {
    items.forEach((item, i) => {
      const on = item.id === id;
      buttons[i].setAttribute("aria-selected", String(on));
      buttons[i].tabIndex = on ? 0 : -1;
      panels[i].hidden = !on;
      if (on) onShow(item, panels[i]);
    });
    if (remember) history.replaceState(null, "", `#${id}`);
  }
  return { list, panels: h("div.tab-panels", null, panels), show };
}

/** Render the page of model `name` into `main`. */
export async function modelPage(main, name) {
  document.title = `${name} · mininn model explorer`;
  const head = h("div.page-head", null, h("h1", null, name));
  const factsSlot = h("div.facts-slot", null, h("p.status-line", { role: "status" }, "Loading…"));
  replace(
    main,
    h("nav.breadcrumb", { "aria-label": "Breadcrumb" }, h("a", { href: "/ui/" }, "Models"), " / ", h("span", { "aria-current": "page" }, name)),
    head,
    factsSlot,
  );
  let info;
  try {
    info = await loadFacts(name);
  } catch (error) {
    replace(factsSlot, errorBox(error, `Could not load model ${name}`));
    main.dataset.loaded = "true";
    return;
  }
  const ready = info.meta.state === "READY";
  head.append(stateBadge(info.meta.state));
  const description = info.config && info.config.mininn && info.config.mininn.description;
  replace(
    factsSlot,
    description ? h("p.lead", null, description) : null,
    info.meta.reason ? h("div.error-box", { role: "alert" }, h("strong", null, "Not ready: "), info.meta.reason) : null,
    facts(info.meta, info.config, info.totals),
  );

  const model = { name, metadata: info.meta, config: info.config, modules: null };
  let panel = null;
  let explorer = null;
  const built = new Set();
  const generation = generationOf(info.config);
  const chatTabs = generation && generation.chat_template ? [CHAT, STEER] : [CHAT];
  const tabList = generation ? [...chatTabs, ...TABS] : TABS;
  const strip = tabs(tabList, async (item, element) => {
    if (built.has(item.id)) {
      if (item.id === "activations" && explorer) explorer.run();
      return;
    }
    built.add(item.id);
    if (item.needsReady && !ready) {
      replace(element, h("p.note", null, `The model is not ready (${info.meta.state}); this view needs a loaded model.`));
      return;
    }
    try {
      if (item.id === "chat") {
        replace(element, h("h2.visually-hidden", null, "Chat"), chatView(model));
      } else if (item.id === "steer") {
        replace(element, h("p.status-line", { role: "status" }, "Loading the steering vectors…"));
        replace(element, h("h2.visually-hidden", null, "Steer"), await steerTab(model));
      } else if (item.id === "try") {
        replace(element, h("h2.visually-hidden", null, "Try it"), panel.element);
      } else if (item.id === "activations") {
        replace(element, h("p.status-line", { role: "status" }, "Loading the module tree…"));
        model.modules = model.modules || (await moduleTree(name));
        explorer = activationExplorer(model, panel, { showTryIt: () => strip.show("try", true) });
        replace(element, h("h2.visually-hidden", null, "Activation explorer"), explorer.element);
        explorer.run();
      } else if (item.id === "modules") {
        replace(element, h("p.status-line", { role: "status" }, "Loading the module tree…"));
        model.modules = model.modules || (await moduleTree(name));
        replace(element, h("h2.visually-hidden", null, "Module tree"), moduleTreeView(model.modules));
      } else if (item.id === "parameters") {
        replace(element, h("p.status-line", { role: "status" }, "Computing parameter statistics…"));
        replace(element, h("h2.visually-hidden", null, "Parameters"), parametersView(await parameters(name, { stats: true, bins: 30 })));
      } else if (item.id === "upload") {
        replace(
          element,
          h("h2.visually-hidden", null, "Upload weights"),
          h("p.lead", null, `Upload a state dict to make a new version of ${name}. With “strict” off, keys the model lacks are ignored and missing ones keep the current version’s values.`),
          uploadForm(model, async () => {
            try {
              info = await loadFacts(name);
              model.metadata = info.meta;
              replace(factsSlot, facts(info.meta, info.config, info.totals));
            } catch (error) {
              replace(factsSlot, errorBox(error, "Could not reload the model"));
            }
          }),
        );
      }
      element.dataset.loaded = "true";
    } catch (error) {
      built.delete(item.id);
      replace(element, errorBox(error));
    }
  });
  if (ready) panel = createInputPanel(model);
  main.append(strip.list, strip.panels);
  const wanted = location.hash.slice(1);
  const first = tabList.some((t) => t.id === wanted) ? wanted : ready ? tabList[0].id : "upload";
  strip.show(first, false);
  window.addEventListener("hashchange", () => {
    const id = location.hash.slice(1);
    if (tabList.some((t) => t.id === id)) strip.show(id, false);
  });
  main.dataset.loaded = "true";
}
