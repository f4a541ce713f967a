"""Every built page in headless Chromium, with nothing but 127.0.0.1 reachable."""

from pathlib import Path

import pytest

from .conftest import ROOT, browsed_pages, built_pages, redirect_target

PAGES = browsed_pages()
REDIRECTS = [p for p in built_pages() if redirect_target(p) is not None]
SCREENSHOTS = ROOT / "_build" / "screenshots"

# sphinx-thebe 0.3.1 declares this constant twice under Sphinx 7.4 (an upstream bug):
# the only console error a page may show.
KNOWN_UPSTREAM_ERRORS = ("Identifier 'THEBE_JS_URL' has already been declared",)


def unexpected_errors(visit):
    return [e for e in visit.errors if not any(k in e for k in KNOWN_UPSTREAM_ERRORS)]


def test_redirect_pages_land_on_their_target(browser, server):
    """The root index is a meta refresh: a reader who opens it must land on the intro."""
    assert Path("index.html") in REDIRECTS, "the root index should redirect to the first page"
    for page_path in REDIRECTS:
        target = redirect_target(page_path)
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{server}/{page_path.as_posix()}")
            page.wait_for_url(f"**/{target}", timeout=15000)
            page.wait_for_load_state("load")
            assert page.evaluate("document.querySelector('h1') !== null"), target
        finally:
            context.close()


@pytest.mark.parametrize("view", ["desktop", "dark", "phone"])
@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_page_loads_offline_without_errors(open_page, page_path, view):
    v = open_page(page_path, view)
    assert v.outside == [], f"requests left the site: {v.outside}"
    assert v.failed == [], f"failed requests: {v.failed}"
    assert unexpected_errors(v) == [], f"console errors: {unexpected_errors(v)}"
    broken = v.page.evaluate(
        "[...document.images].filter(i => !i.complete || i.naturalWidth === 0)"
        ".map(i => i.src.slice(0, 80))"
    )
    assert broken == [], f"images that did not load: {broken}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = page_path.as_posix().replace("/", "_").removesuffix(".html")
    v.page.screenshot(path=str(SCREENSHOTS / f"{name}-{view}.png"))


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_math_is_typeset(open_page, page_path):
    v = open_page(page_path)
    counts = v.page.evaluate(
        """() => {
        const maths = [...document.querySelectorAll('.math')];
        return {
          total: maths.length,
          raw: maths.filter(m => !m.querySelector('mjx-container'))
                    .map(m => m.textContent.slice(0, 60)),
        };
      }"""
    )
    assert counts["raw"] == [], f"math left as raw TeX: {counts['raw'][:5]}"
    if page_path.name.startswith("q"):
        assert counts["total"] > 0, "a chapter without typeset math"


EXPLORER_PAGES = [p for p in PAGES if p.name.startswith("q")]


@pytest.mark.parametrize("page_path", EXPLORER_PAGES, ids=str)
def test_static_explorers_respond_to_every_control(open_page, page_path):
    v = open_page(page_path)
    explorers = v.page.locator(".explorer")
    assert explorers.count() > 0
    for e in range(explorers.count()):
        explorer = explorers.nth(e)
        view = explorer.locator(".explorer-view")

        def current(view=view):
            return view.evaluate("el => el.tagName === 'IMG' ? el.src : el.innerHTML")

        first = current()
        controls = explorer.locator("[data-index]")
        assert controls.count() > 0
        for c in range(controls.count()):
            control = controls.nth(c)
            before = current()
            if control.evaluate("el => el.tagName") == "SELECT":
                n = control.evaluate("el => el.options.length")
                if n < 2:
                    continue
                start = control.evaluate("el => el.selectedIndex")
                control.select_option(index=(start + 1) % n)
            else:
                top = int(control.get_attribute("max"))
                if top == 0:
                    continue
                start = int(control.input_value())
                target = top if start != top else 0
                control.fill(str(target))
                control.dispatch_event("input")
                shown = control.evaluate("el => el.parentNode.querySelector('output').textContent")
                values = control.evaluate("el => JSON.parse(el.dataset.values)")
                assert shown == values[target], "the value label does not follow the slider"
            assert current() != before, f"explorer {e}, control {c} did not change the figure"
        assert current() != first
    assert unexpected_errors(v) == []


def sideways_overflow(page) -> int:
    """How far, in CSS px, a page scrolls sideways (0 when it fits its screen)."""
    return page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_readable_at_phone_width(open_page, page_path):
    overflow = sideways_overflow(open_page(page_path, "phone").page)
    assert overflow <= 1, f"the page scrolls sideways by {overflow}px at 375px"


def _contrast(fg, bg):
    def luminance(rgb):
        channels = []
        for c in rgb[:3]:
            c = c / 255
            channels.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
        return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]

    lighter, darker = sorted((luminance(fg), luminance(bg)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


@pytest.mark.parametrize("page_path", EXPLORER_PAGES, ids=str)
def test_figures_and_explorers_stay_legible_in_dark_mode(open_page, page_path):
    page = open_page(page_path, "dark").page
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    colours = page.evaluate(
        """() => [...document.querySelectorAll('.explorer')].map(e => {
            const s = getComputedStyle(e);
            return [s.color, s.backgroundColor];
        })"""
    )
    for fg, bg in colours:
        rgb = [[int(x) for x in c[c.index("(") + 1 : -1].split(",")[:3]] for c in (fg, bg)]
        assert _contrast(*rgb) >= 4.5, f"explorer text {fg} on {bg}"
    # Figures are drawn on an opaque white ground, so dark mode cannot hide their ink.
    alphas = page.evaluate(
        """async () => {
            const out = [];
            const figures = document.querySelectorAll('img.explorer-view, .cell_output img');
            for (const img of figures) {
                await img.decode();
                const c = document.createElement('canvas');
                c.width = img.naturalWidth; c.height = img.naturalHeight;
                const ctx = c.getContext('2d');
                ctx.drawImage(img, 0, 0);
                out.push(ctx.getImageData(1, 1, 1, 1).data[3]);
            }
            return out;
        }"""
    )
    assert alphas and all(a == 255 for a in alphas), alphas


@pytest.mark.parametrize("page_path", EXPLORER_PAGES, ids=str)
def test_figures_have_alt_text(open_page, page_path):
    v = open_page(page_path)
    alts = v.page.evaluate(
        "[...document.querySelectorAll('img.explorer-view, .cell_output img')].map(i => i.alt)"
    )
    assert alts, "a chapter without figures"
    bad = [a for a in alts if not a.strip() or a.endswith((".png", ".svg", ".jpg"))]
    assert bad == [], f"figures whose alt text is missing or a file name: {bad}"


# Marks every shown element whose own text holds a CJK character, and returns how many. A closed
# <details> keeps its content laid out but neither paints it nor fetches its fonts: skipped.
MARK_CJK = """() => {
  let n = 0;
  for (const e of document.querySelectorAll('body *')) {
    const own = [...e.childNodes].filter(c => c.nodeType === 3).map(c => c.textContent).join('');
    const folded = e.closest('details:not([open])') && !e.closest('summary');
    if (/[\\u2e80-\\u9fff\\uff00-\\uffef]/.test(own) && e.getClientRects().length && !folded) {
      e.setAttribute('data-cjk', n++);
    }
  }
  return n;
}"""


def drawn_without_the_books_font(cdp) -> list[str]:
    """The marked elements that Chromium drew without any Noto Sans SC glyph."""
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    boxes = []
    for node in cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": "[data-cjk]"})[
        "nodeIds"
    ]:
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        if not any(f["isCustomFont"] and f["familyName"] == "Noto Sans SC" for f in fonts):
            boxes.append(cdp.send("DOM.getOuterHTML", {"nodeId": node})["outerHTML"][:120])
    return boxes


@pytest.mark.parametrize("page_path", PAGES, ids=str)
def test_chinese_text_is_drawn_with_the_font_the_site_serves(open_page, page_path):
    """A reader whose system has no CJK font (this Chromium has none) must not see boxes.

    Asks Chromium which fonts drew each element: a font being available is not enough
    (a bold sidebar link once drew its Chinese with DejaVu's empty boxes, every font loaded).
    """
    page = open_page(page_path).page
    assert page.evaluate(MARK_CJK), "every page's navigation carries the questions in Chinese"
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        # A slice is fetched when its text is laid out: give late ones a few seconds.
        for _ in range(20):
            page.evaluate("document.fonts.ready")
            boxes = drawn_without_the_books_font(cdp)
            if not boxes:
                break
            page.wait_for_timeout(500)
    finally:
        cdp.detach()
    assert boxes == [], f"Chinese drawn without the book's font (boxes on such a system): {boxes}"


def test_chinese_in_opened_dropdowns_is_drawn_with_the_books_font_too(browser, server):
    """Folded content fetches its fonts only when a reader opens it: open them all, once."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{server}/book/q3a_absolute_positions.html")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate(MARK_CJK)
        cdp = context.new_cdp_session(page)
        cdp.send("DOM.enable")
        cdp.send("CSS.enable")
        for _ in range(20):
            page.evaluate("document.fonts.ready")
            boxes = drawn_without_the_books_font(cdp)
            if not boxes:
                break
            page.wait_for_timeout(500)
        assert boxes == [], boxes
    finally:
        context.close()


def test_search_from_a_chapter_finds_the_chapter(browser, server):
    """A reader on a chapter presses Ctrl+K, types a word, and lands on results that
    include the page that teaches it; no request fails on the way (favicon included)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors = []
    try:
        page = context.new_page()
        page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{server}/book/q1_heads.html", wait_until="load")
        page.keyboard.press("Control+k")
        page.wait_for_function("document.activeElement && document.activeElement.name === 'q'")
        page.keyboard.type("rotary")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search.html?q=rotary*", timeout=15000)
        # Results come in one by one as the search runs (the first five once missed Q3b, with
        # more pages in the book); its summary line is written when it is done.
        page.wait_for_function(
            "(document.querySelector('#search-results .search-summary') || {}).textContent",
            timeout=30000,
        )
        found = page.evaluate(
            "[...document.querySelectorAll('#search-results li a')].map(a => a.href)"
        )
        assert any("q3b_relative_positions" in url for url in found), found
        assert [e for e in errors if not any(k in e for k in KNOWN_UPSTREAM_ERRORS)] == []
    finally:
        context.close()
