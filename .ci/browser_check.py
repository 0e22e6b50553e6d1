"""Open every page of the built book in headless Chromium, offline, and fail on what a reader
would see broken.

    python .ci/browser_check.py [_build/html] [--screenshots _build/screenshots]

The book is served from 127.0.0.1; every request to any other host is blocked and counted.
A page fails on: raw TeX left in its text after MathJax ran, any request that leaves the book,
a table, image or displayed formula wider than the content column (horizontal scrolling at 1280 px), an image that
did not load, or a console error. One full-page screenshot per page is saved for review.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import re
import sys
import threading
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
WIDTH = 1280
SKIP = {"genindex.html", "search.html"}
#: TeX that MathJax should have typeset: \( \) \[ \] $$ or a control word of our formulas.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\(?:frac|times|cdot|mathrm|text|le|ge|tfrac|"
                     r"lceil|rceil|sum|approx|ldots|quad)\b")

MEASURE = """() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const box = article.getBoundingClientRect();
  const out = {wide: [], broken: [], tex: ''};
  for (const el of article.querySelectorAll('table, img, mjx-container[display="true"] > mjx-math')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.right > box.right + 2 || r.width > box.width + 2) {
      out.wide.push(`${el.tagName.toLowerCase()} ${Math.round(r.width)} px > column ` +
                    `${Math.round(box.width)} px: ` +
                    (el.getAttribute('alt') || el.innerText || '').slice(0, 60).replace(/\\s+/g, ' '));
    }
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.complete || img.naturalWidth === 0) out.broken.push(img.getAttribute('src'));
  }
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html", nargs="?", default="_build/html")
    parser.add_argument("--screenshots", default="_build/screenshots")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    root = Path(args.html).resolve()
    shots = Path(args.screenshots)
    shots.mkdir(parents=True, exist_ok=True)
    server, port = serve(root)
    origin = f"http://127.0.0.1:{port}"
    failures: list[str] = []
    todo = pages(root)
    if not todo:
        print(f"no pages under {root}")
        return 1
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        context = browser.new_context(viewport={"width": WIDTH, "height": 900})
        for rel in todo:
            page = context.new_page()
            problems: list[str] = []
            page.on("console", lambda m, p=problems: p.append(f"console {m.type}: {m.text}")
                    if m.type == "error" else None)
            page.on("pageerror", lambda e, p=problems: p.append(f"page error: {e}"))

            def route(r, p=problems):
                url = r.request.url
                if url.startswith(origin) or url.startswith("data:") or url.startswith("blob:"):
                    r.continue_()
                else:
                    p.append(f"request leaves the book: {url}")
                    r.abort()
            page.route("**/*", route)
            page.goto(f"{origin}/{rel.as_posix()}", wait_until="networkidle")
            page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.wait_for_timeout(200)
            seen = page.evaluate(MEASURE)
            problems += [f"wider than the column: {w}" for w in seen["wide"]]
            problems += [f"image did not load: {b}" for b in seen["broken"]]
            for m in RAW_TEX.finditer(seen["tex"]):
                start = max(0, m.start() - 40)
                problems.append("raw TeX: …" + seen["tex"][start:m.end() + 40].replace("\n", " "))
                break
            page.screenshot(path=str(shots / (rel.as_posix().replace("/", "_") + ".png")),
                            full_page=True)
            page.close()
            verdict = "ok" if not problems else f"{len(problems)} problem(s)"
            print(f"{rel.as_posix():<40} {verdict}")
            for p in problems:
                print(f"    {p}")
            failures += [f"{rel}: {p}" for p in problems]
        browser.close()
    server.shutdown()
    print(f"{len(todo)} pages checked, screenshots in {shots}; "
          + ("all clean" if not failures else f"{len(failures)} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
