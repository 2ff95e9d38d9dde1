// Entry point: /ui/ is the models page, /ui/models/<name> a model's page.

import { errorBox, replace } from "./dom.js";
import { modelPage } from "./model_page.js";
import { modelsPage } from "./models_page.js";

async function route() {
  const main = document.getElementById("main");
  const match = location.pathname.match(/^\/ui\/models\/([^/]+)\/?$/);
  try {
    if (match) await modelPage(main, decodeURIComponent(match[1]));
    else await modelsPage(main);
  } catch (error) {
    replace(main, errorBox(error, "The page failed"));
    main.dataset.loaded = "true";
  }
}

route();
