"""The heuristics' choices: which kernel each library launched, what Triton's autotuner kept."""
from __future__ import annotations

from lab import page, results

def heuristic_rows(data: dict | None = None) -> list[dict]:
    """Which kernel each library launched per size (the heuristics' choices)."""
    data = data or results.load("libraries")
    out = []
    for r in data["rows"]:
        if r["part"] == "kernels":
            out.append({"provider": r["kernel"], "n": r["m"],
                        "kernels": "; ".join(r["launched"]) or (r.get("error") or "?")})
    return out


def heuristic_table():
    data = results.load("libraries")
    rows = heuristic_rows(data)
    if not rows:
        return page.text("the run recorded no kernel names: " + data["parameters"]["kernel_names"])
    return page.table(rows, ["provider", "n", "kernels"], {"kernels": "kernel(s) launched"},
                      show=lambda r: r["n"] == 4096,
                      source=results.source_line("libraries"))


def triton_choices() -> list[dict]:
    """The configuration Triton's autotuner kept, per precision and size."""
    data = results.load("libraries")
    return [{"provider": r["kernel"], "n": r["m"], "kept": r["path"]} for r in data["rows"]
            if r["part"] == "time" and r["kernel"].startswith("triton")]


def cutlass_line() -> str:
    """Why there is no CUTLASS DSL row: the measuring machine's answer, else this machine's."""
    why = results.load("libraries")["parameters"]["cutlass_dsl"]
    return f"CUTLASS Python DSL: not measured — {why.split(';')[0]}."


def skipped_lines() -> list[str]:
    data = results.load("libraries")
    return [f"{k}: {v}" for k, v in data["parameters"]["skipped"].items()] or [
        "every provider of the chapter ran"]
