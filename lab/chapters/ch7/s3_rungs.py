"""Section 3, the rungs: what each one changes (a configuration diff, a region of
:mod:`lab.kernels.wgmma`, or a unified diff of two regions), its ratio to cuBLAS and, from
Nsight Compute, what the SM did while it ran."""
from __future__ import annotations

import dataclasses
import difflib
import textwrap

from lab import page, results
from lab.chapters.ch7 import common
from lab.kernels import wgmma
from lab.kernels.wgmma import (epilogue, first, order, pingpong, promote, ring, specialized,
                               stage, streamk)

#: Listings longer than this are cut (with a line saying how many lines were left out).
MAX_LINES = 40


def _fence(code: str, language: str = "python",
           where: str = "lab/kernels/wgmma/specialized.py"):
    lines = code.splitlines()
    if len(lines) > MAX_LINES:
        cut = len(lines) - MAX_LINES
        lines = lines[:MAX_LINES] + [f"# … {cut} more lines in {where}"]
    code = "\n".join(lines)
    return page._Output({"text/plain": code,
                         "text/markdown": f"```{language}\n{code}\n```"})


def _module(name: str):
    """The module of :mod:`lab.kernels.wgmma` that holds region ``name``: the skeleton or one
    of its slots."""
    return next(m for m in (specialized, first, ring, stage, order, epilogue, pingpong, promote,
                            streamk) if name in page.regions(m))


def _source(name: str) -> str:
    """A named region of the kernels modules of chapter 7 (:func:`_module`)."""
    return page.source_of(_module(name), name)


def _file(name: str) -> str:
    return "lab/kernels/wgmma/" + _module(name).__name__.rsplit(".", 1)[1] + ".py"


def region(name: str):
    """A region of the kernels modules, at most :data:`MAX_LINES` lines."""
    return _fence(_source(name), where=_file(name))


def region_lines(name: str, first: str, last: str):
    """The lines of a region from the first containing ``first`` to the next containing
    ``last``."""
    lines = _source(name).splitlines()
    i = next(j for j, ln in enumerate(lines) if first in ln)
    k = next(j for j, ln in enumerate(lines) if j >= i and last in ln)
    return _fence(textwrap.dedent("\n".join(lines[i:k + 1])), where=_file(name))


def region_diff(old: str, new: str):
    """A unified diff of two regions of the kernels module: what the newer rung changed."""
    a = _source(old).splitlines()
    b = _source(new).splitlines()
    diff = difflib.unified_diff(a, b, fromfile=old, tofile=new, lineterm="", n=1)
    return _fence("\n".join(diff), "diff")


def rung_change(rung: str, context: int = 2):
    """What Hopper rung ``rung`` changed, as the compiler sees it: the unified diff of its FP16
    kernel's listing (``python -m lab show``: its configuration's code only) against its
    parent rung's."""
    from lab.kernels.wgmma import rungs
    from lab.listing import listing

    def text(name: str) -> list[str]:
        return listing(wgmma.kernel_for(wgmma.RUNG_CONFIGS[name]), header=False).splitlines()

    parent = rungs.LADDER[rung].parent
    lines = list(difflib.unified_diff(text(parent), text(rung), f"{parent} (Hopper rung "
                                      f"{rungs.LADDER[parent].number})",
                                      f"{rung} (Hopper rung {rungs.LADDER[rung].number})",
                                      lineterm="", n=context))
    code = "\n".join(lines)
    return page._Output({"text/plain": code, "text/markdown": f"```diff\n{code}\n```"})


def config_diff(rung: str):
    """The fields of the rung's configuration that differ from the rung it builds on."""
    new = wgmma.RUNG_CONFIGS[rung]
    old = wgmma.RUNG_CONFIGS[common.PARENT[rung]]
    lines = [f"--- {common.PARENT[rung]}", f"+++ {rung}"]
    for f in dataclasses.fields(new):
        a, b = getattr(old, f.name), getattr(new, f.name)
        if a != b:
            lines += [f"-    {f.name}={a!r}", f"+    {f.name}={b!r}"]
    return _fence("\n".join(lines), "diff")


def _top_stalls(r: dict, count: int = 3) -> str:
    stalls = {k: v for k, v in r["stalls"].items() if k not in ("selected", "not_selected")}
    return ", ".join(f"{k} {v:.1f}" for k, v in list(stalls.items())[:count])


def profile_table():
    """One row per kernel at 4096³ FP16: the median ratio to cuBLAS (three processes) and what
    Nsight Compute counted in one profiled launch."""
    rows = []
    for kernel in results.load("hopper_profile")["parameters"]["profile_kernels"]:
        p = common.profile(kernel)
        s = common.summary(kernel, 4096)
        rung = kernel.rsplit("_", 1)[0]
        rows.append({"kernel": (f"{common.NUMBER[rung]} " if rung in common.NUMBER else "")
                     + kernel, "× cuBLAS": s["ratio_to_cublas"],
                     "ncu µs": p["duration_us"], "SM MHz": p["sm_mhz"],
                     "tensor pipe %": p["tensor_active_pct"],
                     "issue slots %": p["issue_active_pct"],
                     "instr. (M)": p["inst_executed"] / 1e6,
                     "L2 read GB": p["l2_read_bytes"] / 1e9,
                     "DRAM read MB": p["dram_read_bytes"] / 1e6,
                     "top stalls (warps per issue)": _top_stalls(p)})
    return page.table(rows, digits=3, source=results.source_line("hopper_profile"))


def values() -> dict:
    """What the rung paragraphs quote: ratios (medians of three processes) and profile
    counts."""
    def ratio(kernel, size=4096):
        return f"{common.summary(kernel, size)['ratio_to_cublas']:.3f}"

    def tensor(kernel):
        return f"{common.profile(kernel)['tensor_active_pct']:.0f}%"

    p = common.profile
    return {
        "tc_ratio": ratio("tc_fp16"),
        "cpasync_ratio": ratio("wgmma_cpasync_fp16"),
        "cpasync_tensor": tensor("wgmma_cpasync_fp16"),
        "tc_tensor": tensor("tc_fp16"),
        "cpasync_instr_m": f"{p('wgmma_cpasync_fp16')['inst_executed'] / 1e6:.0f}",
        "tc_instr_m": f"{p('tc_fp16')['inst_executed'] / 1e6:.0f}",
        "cpasync_barrier": f"{p('wgmma_cpasync_fp16')['stalls']['barrier']:.1f}",
        "tma_ratio": ratio("wgmma_tma_fp16"),
        "tma_tensor": tensor("wgmma_tma_fp16"),
        "tma_barrier": f"{p('wgmma_tma_fp16')['stalls']['barrier']:.1f}",
        "tma_issue": f"{p('wgmma_tma_fp16')['issue_active_pct']:.0f}%",
        "cpasync_issue": f"{p('wgmma_cpasync_fp16')['issue_active_pct']:.0f}%",
        "twowg_ratio": ratio("wgmma_2wg_fp16"),
        "twowg_tensor": tensor("wgmma_2wg_fp16"),
        "twowg_l2_gb": f"{p('wgmma_2wg_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "tma_l2_gb": f"{p('wgmma_tma_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "twowg_barrier": f"{p('wgmma_2wg_fp16')['stalls']['barrier']:.1f}",
        "ws_ratio": ratio("wgmma_ws_fp16"),
        "ws_tensor": tensor("wgmma_ws_fp16"),
        "ws_barrier": f"{p('wgmma_ws_fp16')['stalls']['barrier']:.1f}",
        "persistent_ratio": ratio("wgmma_persistent_fp16"),
        "persistent_tensor": tensor("wgmma_persistent_fp16"),
        "persistent_ratio_8192": ratio("wgmma_persistent_fp16", 8192),
        "pingpong_ratio": ratio("wgmma_pingpong_fp16"),
        "pingpong_tensor": tensor("wgmma_pingpong_fp16"),
        "pingpong_l2_gb": f"{p('wgmma_pingpong_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "persistent_l2_gb": f"{p('wgmma_persistent_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "pingpong_long_scoreboard":
            f"{p('wgmma_pingpong_fp16')['stalls']['long_scoreboard']:.1f}",
        "tmastore_ratio": ratio("wgmma_tmastore_fp16"),
        "tmastore_ratio_8192": ratio("wgmma_tmastore_fp16", 8192),
        "tmastore_tensor": tensor("wgmma_tmastore_fp16"),
        "tmastore_us": f"{p('wgmma_tmastore_fp16')['duration_us']:.0f}",
        "persistent_us": f"{p('wgmma_persistent_fp16')['duration_us']:.0f}",
        "persistent_l2_write_mb": f"{p('wgmma_persistent_fp16')['l2_write_bytes'] / 1e6:.0f}",
        "tmastore_l2_write_mb": f"{p('wgmma_tmastore_fp16')['l2_write_bytes'] / 1e6:.0f}",
        "cluster_ratio_8192": ratio("wgmma_cluster_fp16", 8192),
        "cluster_tensor": tensor("wgmma_cluster_fp16"),
        "cluster_us": f"{p('wgmma_cluster_fp16')['duration_us']:.0f}",
        "cluster_l2_gb": f"{p('wgmma_cluster_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "tmastore_l2_gb": f"{p('wgmma_tmastore_fp16')['l2_read_bytes'] / 1e9:.2f}",
        "cluster_dram_mb": f"{p('wgmma_cluster_fp16')['dram_read_bytes'] / 1e6:.0f}",
        "tmastore_dram_mb": f"{p('wgmma_tmastore_fp16')['dram_read_bytes'] / 1e6:.0f}",
        "cublas_tensor": tensor("cublas_fp16"),
        "cublas_us": f"{p('cublas_fp16')['duration_us']:.0f}",
        "cublas_instr_m": f"{p('cublas_fp16')['inst_executed'] / 1e6:.0f}",
        "tmastore_instr_m": f"{p('wgmma_tmastore_fp16')['inst_executed'] / 1e6:.0f}",
        "cublas_dram_mb": f"{p('cublas_fp16')['dram_read_bytes'] / 1e6:.0f}",
        "cublas_kernel": p("cublas_fp16")["ncu_kernel"],
    }
