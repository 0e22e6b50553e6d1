"""Small fixes to the pages the theme writes.

* The Thebe extension is set up twice by the book's toolchain, so its inline configuration
  script (``const THEBE_JS_URL = …``) lands twice in every page and the second copy raises
  "Identifier 'THEBE_JS_URL' has already been declared". Keep the first copy of each script.
"""
from __future__ import annotations


def _dedupe_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        attrs = getattr(js, "attributes", {}) or {}
        key = (getattr(js, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attrs.items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", _dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
