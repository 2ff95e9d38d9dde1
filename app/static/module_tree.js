// The module tree, collapsible, in the order named_modules() walks it.

import { formatCount, h } from "./dom.js";

function nodeLine(node) {
  const short = node.name ? node.name.split(".").pop() : "(root)";
  return [
    h("span.mod-name", { title: node.name || "the model itself" }, short),
    h("span.mod-type", null, node.type),
    node.extra_repr ? h("code.mod-repr", null, node.extra_repr) : null,
    h(
      "span.mod-params",
      { title: "own parameters · parameters including submodules" },
      `${formatCount(node.parameters)} own · ${formatCount(node.total_parameters)} total`,
    ),
  ];
}

function renderNode(node, depth) {
  const data = { module: node.name, type: node.type };
  if (!node.children || node.children.length === 0) {
    return h("div.tree-leaf", { dataset: data }, nodeLine(node));
  }
  const details = h(
    "details.tree-node",
    { dataset: data, open: depth < 2 },
    h("summary", null, nodeLine(node)),
    h("ul.tree-children", null, node.children.map((child) => h("li", null, renderNode(child, depth + 1)))),
  );
  return details;
}

/** Every module name in the tree, root ("") first, in walk order. */
export function moduleNames(root) {
  const names = [];
  const walk = (node) => {
    names.push({ name: node.name, type: node.type, leaf: !node.children || node.children.length === 0 });
    (node.children || []).forEach(walk);
  };
  walk(root);
  return names;
}

/** The tree view with expand/collapse-all controls. */
export function moduleTreeView(response) {
  const tree = h("div.tree", { dataset: { testid: "module-tree" } }, renderNode(response.root, 0));
  const setAll = (open) => tree.querySelectorAll("details").forEach((d) => (d.open = open));
  const count = moduleNames(response.root).length;
  return h(
    "div",
    null,
    h(
      "div.controls",
      null,
      h("button", { type: "button", onclick: () => setAll(true) }, "Expand all"),
      h("button", { type: "button", onclick: () => setAll(false) }, "Collapse all"),
      h("span.note", null, `${count} modules · ${formatCount(response.root.total_parameters)} parameters`),
    ),
    tree,
  );
}
