"""The ``hopper_profile`` experiment's host side: ncu's CSV, the marker split, the rows it
assembles from its children's logs and the medians over processes (no GPU needed)."""
import json

import pytest

from lab import experiments, results
from lab.experiments import hopper_profile as hp

HEADER = ['"ID"', '"Kernel Name"', '"gpu__time_duration.sum"', '"dram__bytes_read.sum"',
          '"sm__cycles_elapsed.avg.per_second"',
          '"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"',
          '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"',
          '"smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio"']
UNITS = ['""', '""', '"nsecond"', '"byte"', '"cycle/second"', '"%"', '"inst"', '"inst"']


def launch(i, name, ns, dram=1e6, mhz=1.75e9, tensor=80.0, long=0.5, gmma=2.0):
    return [f'"{i}"', f'"{name}"', f'"{ns:,.0f}"', f'"{dram:,.0f}"', f'"{mhz:.0f}"',
            f'"{tensor}"', f'"{long}"', f'"{gmma}"']


def csv_text(rows, units=True):
    lines = ["==PROF== Connected to process", ",".join(HEADER)]
    if units:
        lines.append(",".join(UNITS))
    lines += [",".join(r) for r in rows]
    return "\n".join(lines) + "\nROW\t{}\n"


def test_parse_raw_csv_reads_values_units_and_skips_noise():
    text = csv_text([launch(0, "_Z14profile_marker", 2000), launch(1, "wgmma_ws_kernel", 190_000)])
    got = hp.parse_raw_csv(text)
    assert [g["name"] for g in got] == ["_Z14profile_marker", "wgmma_ws_kernel"]
    assert got[1]["values"]["gpu__time_duration.sum"] == 190_000
    assert got[1]["units"]["dram__bytes_read.sum"] == "byte"
    # without a units row the first launch is still read
    assert len(hp.parse_raw_csv(csv_text([launch(0, "k", 5)], units=False))) == 1


def test_split_by_marker_assigns_launches_in_order_and_profile_row_scales():
    text = csv_text([launch(0, "early", 1), launch(1, "profile_marker", 1),
                     launch(2, "tc_kernel", 400_000), launch(3, "profile_marker", 1),
                     launch(4, "cublas_small", 1_000), launch(5, "cublas_big", 200_000,
                                                              tensor=95.0, gmma=0.1)])
    groups = hp.split_by_marker(hp.parse_raw_csv(text), ["tc_fp16", "cublas_fp16", "absent"])
    assert [g["name"] for g in groups["tc_fp16"]] == ["tc_kernel"]
    assert "absent" not in groups
    row = hp.profile_row("cublas_fp16", groups["cublas_fp16"])
    assert row["ncu_kernel"] == "cublas_big"                 # the longest launch
    assert row["launched"] == ["cublas_small", "cublas_big"]
    assert row["duration_us"] == pytest.approx(200.0)        # ns -> µs
    assert row["sm_mhz"] == pytest.approx(1750.0)            # cycle/second -> MHz
    assert row["tensor_active_pct"] == 95.0
    assert list(row["stalls"]) == ["long_scoreboard", "gmma"]   # largest first
    assert row["tflops_ncu"] == pytest.approx(2 * 4096 ** 3 / 200e-6 / 1e12)
    assert hp.profile_row("x", [])["error"] == "no profiled launch"


def test_unknown_units_are_not_guessed():
    text = csv_text([launch(0, "profile_marker", 1), launch(1, "k", 5)])
    text = text.replace('"nsecond"', '"fortnight"')
    row = hp.profile_row("k", hp.split_by_marker(hp.parse_raw_csv(text), ["k"])["k"])
    assert row["duration_us"] is None and "fortnight" in row["unknown_units"][0]


def test_usable_metrics_keeps_only_known_base_names():
    assert hp.usable_metrics(None) == list(hp.METRICS)
    kept = hp.usable_metrics({"dram__bytes_read", "lts__t_bytes"})
    assert kept == ["dram__bytes_read.sum", "lts__t_bytes.sum"]
    cmd = hp.ncu_command("ncu", kept, "/tmp/l", ["a", "b"])
    assert cmd[:3] == ["ncu", "--clock-control", "none"]
    assert "--metrics" in cmd and cmd[-3:] == ["/tmp/l", "a", "b"]


def test_group_order_rotates_and_times_the_suspects_again():
    names = hp.kernels("fp16")
    orders = [hp.group_order(names, i) for i in range(3)]
    assert all(sorted(o[:len(names)]) == sorted(names) for o in orders)
    assert len({o[0] for o in orders}) == 3                  # each process starts elsewhere
    assert orders[0][len(names):] == ["wgmma_tmastore_fp16", "wgmma_cluster_fp16",
                                      "cublas_fp16"]


def stab(process, kernel, ms, size=4096, dtype="float16", again=False):
    return {"part": "stability", "kernel": kernel, "m": size, "n": size, "k": size,
            "dtype": dtype, "median_ms": ms, "min_ms": ms * 0.99, "max_ms": ms * 1.2,
            "tflops": 2.0 * size ** 3 / (ms * 1e-3) / 1e12, "process": process,
            "position": 0, "again": again}


def test_summarize_takes_medians_over_processes_and_ignores_second_timings():
    rows = []
    for p, (ours, cublas) in enumerate([(0.20, 0.19), (0.30, 0.19), (0.21, 0.20)]):
        rows += [stab(p, "wgmma_cluster_fp16", ours), stab(p, "cublas_fp16", cublas)]
    rows.append(stab(0, "wgmma_cluster_fp16", 9.0, again=True))
    summary = {r["kernel"]: r for r in hp.summarize(rows)}
    s = summary["wgmma_cluster_fp16"]
    assert s["processes"] == 3 and s["median_ms"] == 0.21
    assert (s["min_ms"], s["max_ms"]) == (0.20, 0.30)
    assert s["ratio_to_cublas"] == pytest.approx(0.19 / 0.20)    # the median of 3 ratios
    assert s["ratio_min"] == pytest.approx(0.19 / 0.30)
    assert rows[0]["ratio_to_cublas"] == pytest.approx(0.19 / 0.20)   # filled in per row
    assert "queued_ratio_to_cublas" not in s                 # no queued timings: no such field


def test_summarize_gives_the_launch_hidden_ratio_where_rows_have_it():
    rows = []
    for p, (ours, q) in enumerate([(0.40, 0.20), (0.30, 0.21), (0.35, 0.19)]):
        rows += [{**stab(p, "wgmma_cluster_fp16", ours), "queued_ms": q},
                 {**stab(p, "cublas_fp16", 0.19), "queued_ms": 0.18}]
    s = {r["kernel"]: r for r in hp.summarize(rows)}["wgmma_cluster_fp16"]
    assert s["ratio_to_cublas"] == pytest.approx(0.19 / 0.35)
    assert s["queued_ms"] == 0.20
    assert s["queued_ratio_to_cublas"] == pytest.approx(0.18 / 0.20)
    assert s["queued_ratio_min"] == pytest.approx(0.18 / 0.21)


def test_assemble_from_logs_gives_a_valid_results_file(tmp_path):
    body = [launch(0, "profile_marker", 1)]
    for i, name in enumerate(hp.PROFILE_KERNELS):
        body += [launch(2 * i + 1, "profile_marker", 1), launch(2 * i + 2, name, 190_000)]
    profile = csv_text(body[1:])
    profile += "".join("ROW\t" + json.dumps({"kernel": n, "finite": True, "error": None}) + "\n"
                       for n in hp.PROFILE_KERNELS)
    (tmp_path / "profile.log").write_text(profile)
    for p in range(3):
        text = "ROW\t" + json.dumps({"kernel": "__process__", "index": p, "failed": {}}) + "\n"
        for kernel, ms in (("wgmma_cluster_fp16", 0.2 + 0.01 * p), ("cublas_fp16", 0.19)):
            text += "ROW\t" + json.dumps(stab(p, kernel, ms)) + "\n"
        text += "ROW\t" + json.dumps({"kernel": "__turn__", "start": 1.0, "end": 2.0}) + "\n"
        (tmp_path / f"stability{p}.log").write_text(text + "Traceback: not a row\n")
    meta = {"ncu": "ncu", "child_status": {"profile": "0", "stability0": "0",
                                           "stability1": "0", "stability2": "1"}}
    out = hp.assemble(str(tmp_path), meta)
    profiles = [r for r in out["rows"] if r["part"] == "profile"]
    assert [r["kernel"] for r in profiles] == list(hp.PROFILE_KERNELS)
    assert all(r["error"] is None and r["output_finite"] for r in profiles)
    assert "stability2" in out["parameters"]["child_errors"]
    assert len(out["parameters"]["turns"]) == 3
    data = {"schema_version": results.SCHEMA_VERSION, "experiment": "hopper_profile",
            "parameters": out["parameters"], "command": "test", "rows": out["rows"],
            "row_fields": out["row_fields"],
            "provenance": {"gpu": "x", "compute_capability": "9.0", "sm_count": 132,
                           "driver": "1", "cuda_runtime": "1", "numba": "1",
                           "numba_cuda": "1", "numpy": "1", "date": "2026-12-01",
                           "host": "h"}}
    results.validate(json.loads(json.dumps(data)))


def test_the_experiment_is_registered_for_chapter_7():
    info = experiments.info("hopper_profile")
    assert info.chapter == "7.1" and "cupy" in info.needs


def test_wait_all_kills_a_child_past_its_time():
    import subprocess
    import sys

    quick = subprocess.Popen([sys.executable, "-c", "pass"])
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    status = hp.wait_all([("quick", quick), ("slow", slow)], lambda x, desc: x, timeout_s=3)
    assert status["quick"] == "0" and status["slow"].startswith("killed")
