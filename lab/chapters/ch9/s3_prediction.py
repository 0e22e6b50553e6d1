"""Prediction: what chapter 6's run of the alignment sizes predicts for this chapter's rows."""
from __future__ import annotations

from lab import page, results

def prediction_rows() -> list[dict]:
    """What chapter 6's run predicts for this chapter's rows: our tops and cuBLAS at 4096³ and
    4097³ (``shapes`` experiment, alignment part)."""
    align = {(r["kernel"], r["m"]): r["tflops"] for r in results.rows("shapes", part="alignment")}
    return [{"provider": name, "n4096": align.get((name, 4096)),
             "n4097": align.get((name, 4097))}
            for name in ("tc_fp16", "cublas_fp16", "warptile_tuned", "cublas_fp32")]


def prediction_table():
    return page.table(prediction_rows(), ["provider", "n4096", "n4097"],
                      {"n4096": "4096³ (TFLOP/s)", "n4097": "4097³ (TFLOP/s)"},
                      source=results.source_line("shapes"))
