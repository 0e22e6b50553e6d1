"""Words a reader can open: each page counted with every fold, toggle and dropdown opened.

A page's count is the words of its article as a browser renders it once every ``<details>``
fold, toggle-button admonition and tab is open: prose, tables, cell outputs and listings, less
the notebook's input cells. A fold shortens the page a reader scrolls past; it does not shorten
the page a reader who opens it reads, so both budgets count what is behind the folds.

    PAGE_BUDGET   words on any one page, opened
    PATH_BUDGET   words on the main path (the intro and chapters 0-10), opened

The appendix pages (``APPENDIX``: the GPU page, the measurement log, the glossary, sources,
where next, the rejected studies, the solutions of chapters 0-4 and 5-7) are outside the main
path; each still has the page budget.
``browser_check.py`` calls ``opened`` on each page after its screenshots and ``path_problems``
once for the book; ``self_test`` checks the path sum without a browser.
"""
from __future__ import annotations

PAGE_BUDGET = 6000
PATH_BUDGET = 45000
#: Pages off the main path (file names of the built book, any folder).
APPENDIX = {"gpu.html", "two_gpus.html", "measurement_log.html", "glossary.html", "sources.html", "next.html",
            "rejected.html", "solutions_a.html", "solutions_b.html",
            "solutions_c.html"}
#: Pages counted on neither: the root's redirect to the intro (counted as the intro).
REDIRECTS = {"index.html"}

#: Open every fold of the article, then count its rendered words less its input cells.
OPEN_AND_COUNT = """() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  for (const d of article.querySelectorAll('details')) d.open = true;
  for (const el of article.querySelectorAll('.toggle-hidden')) el.classList.remove('toggle-hidden');
  for (const el of article.querySelectorAll('.sd-tab-content')) el.style.display = 'block';
  const count = (text) => (text.match(/\\S+/g) || []).length;
  let words = count(article.innerText);
  for (const el of article.querySelectorAll('div.cell_input')) words -= count(el.innerText);
  return words;
}"""


def opened(page) -> int:
    """The words of a Playwright page with every fold opened (the folds stay open after)."""
    return page.evaluate(OPEN_AND_COUNT)


def page_problems(words: int) -> list[str]:
    if words > PAGE_BUDGET:
        return [f"over the opened-word budget: {words} words with every fold open > {PAGE_BUDGET}"]
    return []


def on_path(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] not in APPENDIX | REDIRECTS


def appendix(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] in APPENDIX


def path_problems(counts: dict[str, int], report: bool = True) -> list[str]:
    """The main path's total against its budget (``counts``: page -> opened words)."""
    total = sum(n for rel, n in counts.items() if on_path(rel))
    if report:
        print(f"main path: {total} words opened (budget {PATH_BUDGET}); appendix: "
              f"{sum(n for rel, n in counts.items() if appendix(rel))}")
    if total > PATH_BUDGET:
        return [f"main path over the opened-word budget: {total} words > {PATH_BUDGET}"]
    return []


def self_test() -> list[str]:
    """The path sum fires over budget, counts only the main path, and stays quiet under it."""
    bad = []
    half = PATH_BUDGET // 2 + 1
    if not path_problems({"book/intro.html": half, "book/05_tensor_cores.html": half},
                         report=False):
        bad.append("path budget: two main-path pages over the budget together passed")
    if path_problems({"book/intro.html": half, "book/glossary.html": half,
                      "book/rejected.html": half, "index.html": half}, report=False):
        bad.append("path budget: appendix pages or the root's redirect were counted on the "
                   "main path")
    return bad
