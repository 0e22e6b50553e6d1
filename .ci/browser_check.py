"""Open every page of the built book in headless Chromium, offline, and fail on what a reader
would see broken.

    python .ci/browser_check.py [_build/html] [--screenshots _build/screenshots]
    python .ci/browser_check.py --self-test      # every check, planted once, must fire

The book is served from 127.0.0.1; every request to any other host is blocked and counted.
A page fails on: raw TeX left in its text after MathJax ran; a literal ``{glue`` role or a stray
backtick in its prose (markup that did not render); any request that leaves the book; an image
or displayed formula wider than the content column, or a table wider than the column that does
not scroll inside its own box; a page that scrolls sideways at 1280 px; a word or number broken
inside a table cell; more than WORD_BUDGET visible words, more than TABLE_BUDGET visible tables,
or an open table of more than OPEN_ROWS rows (longer tables go below a fold); an image that did
not load; a console error or an uncaught script error; more words with every fold opened than
``words.PAGE_BUDGET`` on a page, or ``words.PATH_BUDGET`` on the main path (``words.py``).
Full-page screenshots at 1280 and 390 px (``<page>.jpg``, ``<page>-390.jpg``) are saved for
review (JPEG: encoding two PNGs of a 15,000-pixel page took a third of the check's time).
"""
from __future__ import annotations

import argparse
import base64
import functools
import http.server
import re
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import words  # noqa: E402  (the opened-word budgets, beside this file)

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1280
PHONE = 390
#: How screenshots are written.
SHOT = {"type": "jpeg", "quality": 80}
SKIP = {"genindex.html", "search.html"}
WORD_BUDGET = 6000   # visible words a page (prose, tables and outputs; code listings excluded)
TABLE_BUDGET = 15    # visible tables a page
OPEN_ROWS = 15       # body rows of a table shown open; longer ones are collapsed below a fold
#: TeX that MathJax should have typeset: \( \) \[ \] $$ or a control word of our formulas.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\(?:frac|times|cdot|mathrm|text|le|ge|tfrac|"
                     r"lceil|rceil|sum|approx|ldots|quad)\b")

MEASURE = """(budgets) => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const box = article.getBoundingClientRect();
  const out = {wide: [], broken: [], tex: '', split: [], words: 0, tables: 0, long: [],
               pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth};
  const scrolls = (el) => {  // inside a box of the column's width that scrolls sideways
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if ((o === 'auto' || o === 'scroll') && a.getBoundingClientRect().width <= box.width + 2)
        return true;
    }
    return false;
  };
  const label = (el) => (el.getAttribute('alt') || el.innerText || '').slice(0, 60).replace(/\\s+/g, ' ');
  for (const el of article.querySelectorAll('table, img, mjx-container[display="true"] > mjx-math')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if ((r.right > box.right + 2 || r.width > box.width + 2) && !(el.tagName === 'TABLE' && scrolls(el))) {
      out.wide.push(`${el.tagName.toLowerCase()} ${Math.round(r.width)} px > column ` +
                    `${Math.round(box.width)} px: ` + label(el));
    }
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.complete || img.naturalWidth === 0) out.broken.push(img.getAttribute('src'));
  }
  // Words broken inside a table cell: one word whose glyphs sit on two lines.
  const word = /[^\\s\\-\\u2010-\\u2014\\/]{2,}/g;
  for (const table of article.querySelectorAll('table')) {
    if (!table.checkVisibility()) continue;
    out.tables += 1;
    const rows = table.tBodies.length ? [...table.tBodies].reduce((n, b) => n + b.rows.length, 0)
                                      : table.rows.length;
    if (rows > budgets.openRows) out.long.push(`${rows} rows: ` + label(table));
    for (const cell of table.querySelectorAll('td, th')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      let node, found = null;
      while (!found && (node = walker.nextNode())) {
        for (const m of node.data.matchAll(word)) {
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const tops = new Set([...range.getClientRects()].filter(x => x.width > 0)
                                                          .map(x => Math.round(x.top)));
          if (tops.size > 1) { found = m[0]; break; }
        }
      }
      if (found) out.split.push(found);
    }
  }
  // Visible words: what the reader sees, less code listings.
  const count = (text) => (text.match(/\\S+/g) || []).length;
  out.words = count(article.innerText);
  for (const pre of article.querySelectorAll('div.cell_input pre, div.highlight pre'))
    if (pre.checkVisibility()) out.words -= count(pre.innerText);
  const clone = article.cloneNode(true);
  for (const el of clone.querySelectorAll('pre, code, .highlight, script, style, mjx-container, .MathJax'))
    el.remove();
  out.tex = clone.textContent;
  return out;
}"""


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def pages(root: Path) -> list[Path]:
    found = []
    for p in sorted(root.rglob("*.html")):
        rel = p.relative_to(root)
        if rel.parts[0].startswith("_") or rel.name in SKIP:
            continue
        found.append(rel)
    return found


LEAK = re.compile(r"\{glue|`")


def problems_of(seen: dict) -> list[str]:
    """What a reader would see broken, from one page's measurements."""
    out = [f"wider than the column: {w}" for w in seen["wide"]]
    if seen["pageWidth"] > seen["viewport"] + 1:
        out.append(f"page scrolls sideways: {seen['pageWidth']} px > {seen['viewport']} px")
    out += [f"word broken inside a table cell: {w}" for w in seen["split"][:5]]
    if len(seen["split"]) > 5:
        out.append(f"… and {len(seen['split']) - 5} more cells with a broken word")
    if seen["words"] > WORD_BUDGET:
        out.append(f"over the word budget: {seen['words']} visible words > {WORD_BUDGET}")
    if seen["tables"] > TABLE_BUDGET:
        out.append(f"too many tables: {seen['tables']} visible > {TABLE_BUDGET}")
    out += [f"open table over {OPEN_ROWS} rows: {t}" for t in seen["long"]]
    out += [f"image did not load: {b}" for b in seen["broken"]]
    text = seen["tex"]
    for pattern, what in ((RAW_TEX, "raw TeX"), (LEAK, "unrendered markup")):
        m = pattern.search(text)
        if m:
            start = max(0, m.start() - 40)
            out.append(f"{what}: …" + text[start:m.end() + 40].replace("\n", " "))
    return out


def _within(origin: str, problems: list[str]):
    """A route handler that lets requests to the book through and blocks and records every
    other. (One parameter: Playwright passes a handler of two the request as its second.)"""
    def route(r):
        url = r.request.url
        if url.startswith(origin) or url.startswith("data:") or url.startswith("blob:"):
            r.continue_()
        else:
            problems.append(f"request leaves the book: {url}")
            r.abort()
    return route


def check(root: Path, todo: list[Path], shots: Path, quiet: bool = False,
          counts: dict[str, int] | None = None, ahead: int = 0,
          lines: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Open each page of ``todo`` (paths under ``root``) and return its problems by page;
    ``counts``, if given, receives each page's words with every fold opened, and ``lines`` the
    lines printed for it (printed as they come unless ``quiet``). ``ahead``: pages that load
    while one is measured (for small pages, whose time is the wait for an idle network; the
    book's pages keep one browser busy, and load one at a time)."""
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    server, port = serve(root)
    origin = f"http://127.0.0.1:{port}"
    found: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        context = browser.new_context(viewport={"width": WIDTH, "height": 900})

        def opened(rel: Path):
            """A new page, watched from its first request, its navigation to ``rel`` begun."""
            page = context.new_page()
            problems: list[str] = []
            page.on("console", lambda m, p=problems: p.append(f"console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e, p=problems: p.append(f"page error: {e}"))
            page.route("**/*", _within(origin, problems))
            page.goto(f"{origin}/{rel.as_posix()}", wait_until="commit")
            return page, problems

        queue, loading = iter(todo), []
        for rel in todo:
            while len(loading) < 1 + ahead and (nxt := next(queue, None)) is not None:
                loading.append(opened(nxt))
            page, problems = loading.pop(0)
            page.wait_for_load_state("networkidle")
            page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.wait_for_timeout(200)
            seen = page.evaluate(MEASURE, {"openRows": OPEN_ROWS})
            problems += problems_of(seen)
            shot = shots / rel.as_posix().replace("/", "_")
            page.screenshot(path=f"{shot}.jpg", full_page=True, **SHOT)
            page.set_viewport_size({"width": PHONE, "height": 844})
            page.wait_for_timeout(100)
            page.screenshot(path=f"{shot}-{PHONE}.jpg", full_page=True, **SHOT)
            seen["opened"] = words.opened(page)
            problems += words.page_problems(seen["opened"])
            if counts is not None:
                counts[rel.as_posix()] = seen["opened"]
            page.close()
            verdict = "ok" if not problems else f"{len(problems)} problem(s)"
            said = [f"{rel.as_posix():<40} {verdict} ({seen['words']} words, "
                    f"{seen['opened']} opened, {seen['tables']} tables)"]
            said += [f"    {p}" for p in problems]
            if lines is not None:
                lines[rel.as_posix()] = said
            if not quiet:
                print("\n".join(said), flush=True)
            found[rel.as_posix()] = problems
        browser.close()
    server.shutdown()
    return found


#: The self-test's pages: name -> (body html, the problem it must raise; None: must be clean).
_ROW = "<tr><td>row</td><td class='num'>1.0</td></tr>"
_WIDE_ROW = "<tr>" + "<td>column&nbsp;of&nbsp;words</td>" * 40 + "</tr>"
#: Half a page budget and a little more: two of them behind folds make a page over it.
_HALF = "word " * (words.PAGE_BUDGET // 2 + 50)
#: A 10 x 10 px image that needs no request.
_SVG = "data:image/svg+xml;base64," + base64.b64encode(
    b"<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'>"
    b"<rect width='10' height='10'/></svg>").decode()
PLANTS = {
    "clean.html": ("<p>A clean page with a table and a figure.</p><div class='lab-table-wrap'>"
                   f"<table>{_ROW * 3}</table></div><img src='{_SVG}' style='width:200px' "
                   "alt='a figure'>", None),
    "scrolled.html": (f"<div style='overflow-x:auto'><table>{_WIDE_ROW}</table></div>", None),
    "tex.html": ("<p>The time is \\(2mnk\\) over the rate.</p>", "raw TeX"),
    "request.html": ("<link rel='stylesheet' href='http://example.com/x.css'>"
                     "<p>A page styled from elsewhere.</p>", "request leaves the book"),
    "image.html": ("<img src='missing.png' alt='a figure that is not there'>",
                   "image did not load"),
    "console.html": ("<script>console.error('planted')</script>", "console error"),
    "pageerror.html": ("<script>throw new Error('planted')</script>", "page error"),
    "wideimage.html": (f"<img src='{_SVG}' style='width:1000px' alt='a wide figure'>",
                       "wider than the column: img"),
    "wideformula.html": ("<mjx-container display='true'><mjx-math style='display:inline-block;"
                         "width:1000px'>x</mjx-math></mjx-container>",
                         "wider than the column: mjx-math"),
    "glue.html": ("<p>The rate is {glue:text}`rate` TFLOP/s.</p>", "unrendered markup"),
    "backtick.html": ("<p>The kernel `tc_fp16` runs.</p>", "unrendered markup"),
    "wide.html": ("<div style='width:2600px'>a paragraph wider than any screen</div>",
                  "page scrolls sideways"),
    "widetable.html": (f"<table>{_WIDE_ROW}</table>", "wider than the column: table"),
    "split.html": ("<table style='width:60px'><tr><td style='overflow-wrap:anywhere'>"
                   "float16accumulatorkernelname</td></tr></table>",
                   "word broken inside a table cell"),
    "words.html": ("<p>" + "word " * (WORD_BUDGET + 10) + "</p>", "over the word budget"),
    "tables.html": (("<table>" + _ROW + "</table>") * (TABLE_BUDGET + 1), "too many tables"),
    "rows.html": ("<table>" + _ROW * (OPEN_ROWS + 1) + "</table>", f"open table over {OPEN_ROWS} rows"),
    "folded.html": ("<details><summary>all rows</summary><table>" + _ROW * (OPEN_ROWS + 5)
                    + "</table></details>", None),
    "inputs.html": ("<div class='cell_input'><pre style='white-space:pre-wrap'>"
                    + "word " * (words.PAGE_BUDGET + 10) + "</pre></div>", None),
    "behindfolds.html": ("<style>.toggle-hidden p{display:none}</style><p>A short page.</p>"
                         "<details><summary>more</summary><p>" + _HALF + "</p></details>"
                         "<div class='admonition toggle-hidden'><p>" + _HALF + "</p></div>",
                         "over the opened-word budget"),
}


def self_test(shots: Path) -> int:
    """Plant each fault on a page of its own; every check must fire, and only where planted."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, (body, _) in PLANTS.items():
            (root / name).write_text(f"<!doctype html><html><head><meta charset='utf-8'>"
                                     f"<style>main{{max-width:800px}}</style></head>"
                                     f"<body><main>{body}</main></body></html>")
        found = check(root, [Path(n) for n in PLANTS], shots, quiet=True, ahead=3)
    bad = words.self_test()
    for name, (_, expected) in PLANTS.items():
        got = found[name]
        if expected is None and got:
            bad.append(f"{name}: expected clean, got {got}")
        elif expected is not None and not any(p.startswith(expected) for p in got):
            bad.append(f"{name}: the check '{expected}' did not fire (got {got})")
    for line in bad:
        print("self-test: " + line)
    print(f"self-test: {len(PLANTS)} planted pages, " + ("every check fired" if not bad
                                                          else f"{len(bad)} failure(s)"))
    return 1 if bad else 0


def _check_share(root: Path, share: list[Path], shots: Path):
    counts: dict[str, int] = {}
    lines: dict[str, list[str]] = {}
    found = check(root, share, shots, quiet=True, counts=counts, lines=lines)
    return found, counts, lines


def check_in_browsers(root: Path, todo: list[Path], shots: Path, browsers: int):
    """:func:`check` of ``todo`` shared among ``browsers`` processes, each with a browser of its
    own (the book's pages are dealt largest first, so that the shares take alike), the lines
    printed in page order: (problems by page, opened words by page)."""
    from concurrent.futures import ProcessPoolExecutor

    browsers = max(1, min(browsers, len(todo)))
    by_size = sorted(todo, key=lambda rel: -(root / rel).stat().st_size)
    shares = [by_size[i::browsers] for i in range(browsers)]
    found: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    lines: dict[str, list[str]] = {}
    with ProcessPoolExecutor(browsers) as pool:
        for f, c, ln in pool.map(_check_share, [root] * browsers, shares, [shots] * browsers):
            found.update(f)
            counts.update(c)
            lines.update(ln)
    for rel in todo:
        print("\n".join(lines[rel.as_posix()]))
    return {rel.as_posix(): found[rel.as_posix()] for rel in todo}, counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html", nargs="?", default="_build/html")
    parser.add_argument("--screenshots", default="_build/screenshots")
    parser.add_argument("--self-test", action="store_true",
                        help="plant every fault on a page of its own and check each is caught")
    parser.add_argument("--browsers", type=int, default=2,
                        help="browsers opening pages side by side, each in a process of its "
                             "own (default 2)")
    args = parser.parse_args(argv)
    shots = Path(args.screenshots)
    if args.self_test:
        return self_test(shots / "self-test")
    root = Path(args.html).resolve()
    todo = pages(root)
    if not todo:
        print(f"no pages under {root}")
        return 1
    found, counts = check_in_browsers(root, todo, shots, args.browsers)
    found["main path"] = words.path_problems(counts)
    for p in found["main path"]:
        print(p)
    failures = sum(len(p) for p in found.values())
    print(f"{len(todo)} pages checked, screenshots in {shots}; "
          + ("all clean" if not failures else f"{failures} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
