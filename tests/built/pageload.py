"""What a reader's browser downloads and sees: shared by the browser tests and `make bench`.

Every measurement opens the page in a fresh browser context (an empty cache, as on a
reader's first visit) served from 127.0.0.1, waits until the network is quiet, MathJax has
typeset and the fonts are in, and then measures in the page.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

BUDGET_MB = 2.5  # a chapter's first load, every request counted
MIN_TEXT_PX = 11.0  # smallest text in figures and explorers at 1280 px


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(root: Path):
    """The built book on 127.0.0.1, as `make serve` does; yields its base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


@dataclass
class FirstLoad:
    """A first visit: what was received, what was refused, what went wrong, and the open page."""

    requests: list[tuple[str, int]] = field(default_factory=list)  # (url, bytes received)
    outside: list[str] = field(default_factory=list)  # requests that tried to leave the site
    failed: list[str] = field(default_factory=list)  # failed requests and HTTP errors
    errors: list[str] = field(default_factory=list)  # console errors and uncaught exceptions
    page: object = None

    @property
    def total_mb(self) -> float:
        return sum(size for _, size in self.requests) / 1e6

    def largest(self, n: int = 5) -> str:
        top = sorted(self.requests, key=lambda r: -r[1])[:n]
        return ", ".join(f"{url.rsplit('/', 1)[-1][:40]} {size / 1e3:.0f} kB" for url, size in top)

    def close(self) -> None:
        self.page.context.close()


def settle(page) -> None:
    """Wait for the network, MathJax and the web fonts, as a reader's first view does."""
    page.wait_for_load_state("networkidle")
    if page.evaluate("document.querySelectorAll('.math').length"):
        page.wait_for_function(
            "window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=20000
        )
        page.evaluate("MathJax.startup.promise")
    page.evaluate("document.fonts.ready.then(() => true)")
    page.wait_for_load_state("networkidle")


def first_load(browser, url: str, width: int = 1280, **context) -> FirstLoad:
    """Open ``url`` in a new context (an empty cache) with only 127.0.0.1 reachable, and
    settle. Pages that redirect are not for this: open their target. Close when done."""
    ctx = browser.new_context(viewport={"width": width, "height": 900}, **context)
    page = ctx.new_page()
    load = FirstLoad(page=page)
    host = urlparse(url).netloc

    def route(r):
        if urlparse(r.request.url).netloc == host or r.request.url.startswith("data:"):
            r.continue_()
        else:
            load.outside.append(r.request.url)
            r.abort()

    def finished(request):
        with contextlib.suppress(Exception):
            sizes = request.sizes()
            load.requests.append(
                (request.url, sizes["responseBodySize"] + sizes["responseHeadersSize"])
            )

    ctx.route("**/*", route)
    page.on("requestfinished", finished)
    page.on("requestfailed", lambda req: load.failed.append(req.url))
    page.on(
        "response", lambda res: res.status >= 400 and load.failed.append(f"{res.status} {res.url}")
    )
    page.on("console", lambda msg: msg.type == "error" and load.errors.append(msg.text))
    page.on("pageerror", lambda exc: load.errors.append(str(exc)))
    page.goto(url, wait_until="load")
    settle(page)
    return load


# In-page measurements, each a JavaScript function returning plain data.

# Every explorer, every frame: the smallest text in CSS px. An <img> frame declares its
# smallest font (points) and how many CSS px a point is at its displayed size; HTML frames
# are measured: computed font size, times the scale of any SVG the text sits in.
EXPLORER_TEXT_JS = """
async () => {
  function smallestText(view) {
    if (view.tagName === 'IMG') {
      const points = Number(view.dataset.textPoints || 0);
      const scale = view.clientWidth / Number(view.getAttribute('width'));
      return points * Number(view.dataset.pxPerPoint || 1) * scale;
    }
    let least = Infinity;
    const walker = document.createTreeWalker(view, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.textContent.trim()) continue;
      const el = node.parentElement;
      if (!el.getClientRects().length) continue;
      let size = parseFloat(getComputedStyle(el).fontSize);
      const svg = el.closest('svg');
      if (svg && svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width) {
        size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      }
      least = Math.min(least, size);
    }
    return least;
  }
  const out = [];
  for (const [e, root] of [...document.querySelectorAll('.explorer')].entries()) {
    const inputs = [...root.querySelectorAll('[data-index]')];
    const sizes = inputs.map(
      el => el.tagName === 'SELECT' ? el.options.length : Number(el.max) + 1);
    const total = sizes.reduce((a, b) => a * b, 1);
    let least = Infinity, where = '';
    for (let n = 0; n < total; n++) {
      let rest = n;
      inputs.forEach((el, i) => {
        el.value = String(rest % sizes[i]);
        rest = Math.floor(rest / sizes[i]);
      });
      inputs.forEach(el => el.dispatchEvent(new Event('input')));
      const view = root.querySelector('.explorer-view');
      if (view.tagName === 'IMG') { await view.decode(); }
      const size = smallestText(view);
      if (size < least) { least = size; where = inputs.map(el => el.value).join('-'); }
    }
    out.push({explorer: e, frames: total, smallest: least, frame: where});
  }
  return out;
}
"""

# Static figures in outputs: raster ones must hold two pixels per CSS pixel; SVG ones are
# vector, and their smallest text (font size in user units) is scaled to the displayed width.
FIGURES_JS = """
async () => {
  const out = [];
  for (const img of document.querySelectorAll('.cell_output img, img.explorer-view')) {
    if (!img.getClientRects().length || img.clientWidth === 0) continue;
    await img.decode().catch(() => null);
    const entry = {src: img.src.slice(0, 80), displayed: img.clientWidth,
                   natural: img.naturalWidth, svg: false, smallest: null};
    if (/\\.svg($|\\?)/.test(img.src) || img.src.startsWith('data:image/svg')) {
      entry.svg = true;
      const text = await (await fetch(img.src)).text();
      const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
      const root = doc.documentElement;
      const box = root.getAttribute('viewBox');
      const width = box ? Number(box.split(/[ ,]+/)[2]) : parseFloat(root.getAttribute('width'));
      const sizes = [...doc.querySelectorAll('text')].map(t => {
        const style = t.getAttribute('style') || '';
        const m = style.match(/font-size:\\s*([0-9.]+)px/) || [null, t.getAttribute('font-size')];
        return Number(m[1]);
      }).filter(v => v > 0);
      if (sizes.length) entry.smallest = Math.min(...sizes) * img.clientWidth / width;
    }
    out.push(entry);
  }
  return out;
}
"""

# Text in outputs and explorers against what is really behind it: the first opaque
# background up the tree, with semi-transparent ones composited onto it.
CONTRAST_JS = """
() => {
  function rgba(s) {
    const m = s.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return [0, 0, 0, 0];
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  function over(top, under) {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  }
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let colour = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      colour = rgba(getComputedStyle(document.documentElement).backgroundColor);
      if (colour[3] === 0) colour = [255, 255, 255, 1];
    }
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  }
  function luminance(c) {
    const [r, g, b] = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }
  function ratio(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }
  const bad = [];
  const roots = document.querySelectorAll('.cell_output, .explorer');
  const seen = new Set();
  for (const root of roots) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const el = walker.currentNode.parentElement;
      if (seen.has(el) || !walker.currentNode.textContent.trim()) continue;
      seen.add(el);
      if (!el.getClientRects().length || el.closest('script, style, option')) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || Number(style.opacity) === 0) continue;
      const inSvg = el.closest('svg');
      const fg = rgba(inSvg ? style.fill : style.color);
      const bg = background(inSvg ? inSvg.parentElement : el);
      const value = ratio(over(fg, bg), bg);
      if (value < 4.5) {
        bad.push({text: walker.currentNode.textContent.trim().slice(0, 40),
                  ratio: Math.round(value * 100) / 100, colour: inSvg ? style.fill : style.color});
      }
    }
  }
  return bad;
}
"""

# Display equations at the current width: how much wider than their column each one is.
EQUATIONS_JS = """
() => [...document.querySelectorAll('mjx-container[display="true"]')].map(m => {
  const column = m.parentElement.getBoundingClientRect().width;
  const math = m.querySelector('mjx-math') || m;
  const width = math.getBoundingClientRect().width;
  const tex = (m.parentElement.dataset.plain || m.parentElement.textContent || '').slice(0, 60);
  return {width: Math.round(width), column: Math.round(column), tex: tex};
}).filter(e => e.width > e.column + 1)
"""
