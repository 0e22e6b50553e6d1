"""Chapter 7's package: the solutions (moved beside the chapter), what each rung's listing
shows, and every glued name written where it is computed. (What the prose says of the results
files is checked in ``tests/claims/test_ch7_claims.py``.)"""
import numpy as np

from lab import hopper
from lab.chapters import ch7
from lab.chapters.ch7 import s3_rungs, s4_stability, solutions
from lab.kernels import wgmma


def test_hopper_descriptor_answer():
    out = solutions.ex07_1()
    assert out["reads_what_tma_wrote"]
    assert (out["a_sbo"], out["b_lbo"], out["b_sbo"], out["swizzle"]) == (1024, 8192, 1024, 1)
    assert hopper.desc_fields(int(out["a_desc"], 16))["address"] == out["a_address"]
    # The twins' comparison can fail: an A start 16 bytes (not 32) per k-step reads other data.
    r, kk = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    assert not np.array_equal(hopper.swizzle_128b(16 * 3 + hopper.k_major_offset(r, kk)),
                              hopper.swizzle_128b(hopper.tma_box_offset(r, 16 * 3 + kk)))


def test_hopper_stage_and_register_budgets():
    s = solutions.ex07_2()
    assert s["refused_128x128"] and s["refused_128x256"]
    assert s["max_stages_128x256"] == wgmma.RUNG_CONFIGS["wgmma_ws"].stages
    r = solutions.ex07_4()
    assert r["entry"] == r["ptxas"] and r["max_consumer"] == r["chosen"]
    assert r["used"] <= r["file"] < r["used"] + 128 * 2 * 8     # 8 more each would not fit
    assert r["alt_left"] < r["left"]


def test_hopper_ladder_answer_from_the_medians():
    out = solutions.ex07_3()
    assert out["best_4096"] == out["best_8192"] == "wgmma_2wg"
    assert out["slices_8192"] == 2 * out["slices_4096"]
    g4, g8 = out["gains_4096"], out["gains_8192"]
    assert g4["wgmma_tmastore"] > g8["wgmma_tmastore"] > 1        # the epilogue's share halves
    assert g4["wgmma_tma"] < 1 and g4["wgmma_pingpong"] < 1         # the two steps down


def test_every_listing_is_short_and_a_diff_shows_only_changes():
    for name in ("producer", "epilogue_tma", "cpasync_mainloop"):
        assert len(str(ch7.region(name)).splitlines()) <= s3_rungs.MAX_LINES + 1
    diff = str(ch7.config_diff("wgmma_2wg")).splitlines()
    assert diff[:2] == ["--- wgmma_tma", "+++ wgmma_2wg"]
    assert {ln.split("=")[0].strip("+- ") for ln in diff[2:]} == {"bn", "consumers"}
    assert "tma_load_2d_multicast" in str(ch7.region_diff("tma_stage", "multicast_stage"))


def test_glued_names_are_written_literally_in_the_package():
    import inspect
    import pathlib

    text = "".join(p.read_text() for p in pathlib.Path(inspect.getfile(ch7)).parent.glob("*.py"))
    names = {**ch7.s1_result.values(), **s3_rungs.values(), **s4_stability.values(),
             **solutions.values()}
    missing = [n for n in names if f'"{n}"' not in text]
    assert not missing, missing
