"""Chapter 3, registers: each thread keeps a P × P patch of C in registers.

The page's sections, in order, one module each: :mod:`.s1_idea` (reuse inside the thread, the
per-thread model), :mod:`.s2_kernel` (the kernel's source), :mod:`.s3_check` (run and check),
:mod:`.s4_bill` (the register bill from the compiler, and the signed-index detour),
:mod:`.s5_measured` (prediction and measurement on the GPU), :mod:`.s6_twin` (Numba against the
T4 study's CUDA C), :mod:`.s7_t4` (beside the T4 study's T4), :mod:`.s8_intensity` (the
step-by-step model's intensity formula beside the measurement); the exercises' solutions in
:mod:`.solutions`. Compiler facts come from :mod:`lab.compiler`'s committed store, so they are
the same on every machine. The notebook calls only the names imported here.
"""
from __future__ import annotations

from lab import page
from lab.chapters import common
from lab.chapters.ch3.s1_idea import model_rows, model_table, patch_figure
from lab.chapters.ch3.s2_kernel import FOLDED, source
from lab.chapters.ch3.s3_check import PATCH, CHECKS, check_rows, check_table
from lab.chapters.ch3.s4_bill import (KERNELS, SIGNED, BLOCK_THREADS, compiler_rows, bill_table,
                                      loop_table, signed_table)
from lab.chapters.ch3.s5_measured import (TWIN, TWIN_OF, PREDICTIONS, sweep, signed_sweep,
                                          measured_table, fp32_roof,
                                          step_rows, step_table, ceiling_rows, ceiling_table,
                                          sweep_figure, BANKS, BANK_BYTES, shared_peak_tbps)
from lab.chapters.ch3.s6_twin import EARLIER_TWINS, twin_compile_table, twin_rows, twin_table
from lab.chapters.ch3.s7_t4 import gpu_name, t4_rows, t4_table
from lab.chapters.ch3.s8_intensity import intensity_rows, intensity_table
from lab.chapters.common import example_inputs, verdict
from lab.chapters.ch3 import s1_idea, s4_bill, s5_measured, s6_twin, s7_t4, s8_intensity

__all__ = ["figure", "example_inputs", "verdict", "model_rows", "model_table", "patch_figure",
           "FOLDED", "source", "PATCH", "CHECKS", "check_rows", "check_table", "KERNELS", "SIGNED",
           "BLOCK_THREADS", "compiler_rows", "bill_table", "loop_table", "signed_table",
           "TWIN", "TWIN_OF", "PREDICTIONS", "sweep", "signed_sweep",
           "measured_table", "fp32_roof", "step_rows", "step_table",
           "ceiling_rows", "ceiling_table", "sweep_figure", "EARLIER_TWINS", "twin_compile_table",
           "twin_rows", "twin_table", "gpu_name", "t4_rows", "t4_table", "intensity_rows",
           "intensity_table", "BANKS", "BANK_BYTES", "compile_targets", "prefetch",
           "shared_peak_tbps", "values", "glue"]


def compile_targets() -> list[str]:
    """Everything the chapter compiles: the five kernels, their signed builds, and the twin."""
    return list(KERNELS) + list(SIGNED.values()) + [f"twin:{TWIN}"]


def prefetch(targets=None) -> None:
    """Make sure the compiler facts of ``targets`` (default :func:`compile_targets`) are at hand
    (:func:`lab.chapters.common.prefetch`)."""
    common.prefetch(targets or compile_targets())


def values() -> dict:
    """Every number the page quotes, section by section, as strings."""
    return {**s1_idea.values(), **s4_bill.values(), **s5_measured.values(), **s6_twin.values(),
            **s7_t4.values(), **s8_intensity.values()}


def glue():
    """Glue :func:`values` for the prose and return them as one checked text block."""
    return page.glue(values())


def figure(fig):
    """Show a figure on the page."""
    return page.figure(fig)
