"""The kernel: chapter 7's best structure on another input type, its promotion, its configuration and compiled code."""
from __future__ import annotations

from lab import compiler, page
from lab.kernels.wgmma import fp8 as wgmma_fp8, promote, stage


def kernel_source():
    """The FP8 half of the stage: one TMA box of Bᵀ per stage, four K-major k-steps."""
    return page.source(stage, "tma_stage")


def promotion_source():
    """The promoting main loop the block-scaled kernels run (a promotion every stage); the
    loop for any interval beside it in the same module is named on the page, not shown."""
    return page.source(promote, "promotion_counted")


def config_rows() -> list[dict]:
    rows = []
    for name, cfg in wgmma_fp8.CONFIGS.items():
        rows.append({"kernel": name, "tile": f"{cfg.bm}×{cfg.bn}×{cfg.bk}",
                     "stages": cfg.stages, "scales": cfg.scales,
                     "promotion every (k)": cfg.promote or "never", "output": cfg.out,
                     "shared memory (KB)": cfg.shared_bytes / 1024})
    return rows


def config_table():
    return page.table(config_rows())


def sass_rows() -> list[dict]:
    """Registers and instruction counts of each FP8 kernel, from the committed compiler facts
    (compiled offline for sm_90a; no GPU needed)."""
    rows = []
    for name in wgmma_fp8.CONFIGS:
        try:
            rep = compiler.report(name)[0]
        except Exception as exc:  # noqa: BLE001 - facts not recorded for these sources
            return [{"kernel": name, "facts": f"not available here ({type(exc).__name__})"}]
        mix = rep.mix
        rows.append({"kernel": name, "registers": rep.registers,
                     "spilled bytes": rep.spill_stores,
                     "QGMMA per stage": mix.get("QGMMA", 0),
                     "TMA loads (UTMALDG)": mix.get("UTMALDG", 0),
                     "TMA stores (UTMASTG)": mix.get("UTMASTG", 0),
                     "promotion adds (FADD/FFMA)": mix.get("FADD", 0) + mix.get("FFMA", 0)})
    return rows


def sass_table():
    return page.table(sass_rows())
