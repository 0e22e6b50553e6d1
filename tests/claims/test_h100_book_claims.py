"""The prose's claims against the H100's files: the book CI also builds for a reader on an H100
(``LAB_GPU=h100-80gb-hbm3``), whose pages quote that GPU's numbers inside the H200's
sentences. Every claims test runs again with that GPU selected, in a child pytest. Those that
fail there are exactly :data:`H200_ONLY`: paragraphs that state what the H200's run found and
the H100's run does not show, each with what the H100's file says instead. A sentence that
newly turns false on the H100 fails this test, and so does one on the list that has come to
hold (take it off)."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

GPU = "h100-80gb-hbm3"
HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]

#: test (module::function) -> what the H100's files say where the page states the H200's finding
H200_ONLY = {
    "test_ch7_claims::test_what_descriptor_steps_and_the_staging_ring_say_holds_in_the_file":
        "the staging ring read 0.981 of cuBLAS at 4096³ BF16, below the page's 0.985",
    "test_ch7_claims::test_what_the_store_threads_paragraph_says_holds":
        "the store threads read 0.984 at 4096³ BF16, behind the uniform index's 0.987",
    "test_ch7_claims::test_what_the_tile_table_paragraph_says_holds":
        "rung 19's lowest process read 0.996 of cuBLAS, not past it in every process",
    "test_ch7b_claims::test_grouped_beats_the_loop_on_256_experts_and_loses_on_eight":
        "PyTorch's grouped GEMM ran the DeepSeek-like gate/up prefill at 0.94 of the loop",
}


def _failed(report: Path) -> set[str]:
    """``module::function`` of every failed or erroring test case in a JUnit report."""
    out = set()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            module = case.get("classname", "").rsplit(".", 1)[-1]
            out.add(f"{module}::{case.get('name', '').split('[')[0]}")
    return out


def test_on_the_h100s_files_only_the_listed_h200_findings_fail(tmp_path):
    report = tmp_path / "junit.xml"
    env = dict(os.environ, LAB_GPU=GPU, LAB_DEVICE="simulator")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(HERE.parent), f"--ignore={HERE}", "-q",
         "-o", "addopts=", "-p", "no:cacheprovider", "-p", "no:xdist", f"--junitxml={report}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert report.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    cases = list(ElementTree.parse(report).getroot().iter("testcase"))
    assert len(cases) > 50, run.stdout[-2000:]
    failed = _failed(report)
    assert not failed - set(H200_ONLY), ("newly false on the H100's files:\n"
                                         + "\n".join(sorted(failed - set(H200_ONLY))))
    assert not set(H200_ONLY) - failed, ("now holding on the H100's files (off the list):\n"
                                         + "\n".join(sorted(set(H200_ONLY) - failed)))
