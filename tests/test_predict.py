"""lab.predict: another GPU's numbers predicted from the H200's results and both datasheets,
before it is measured — the rules, the waves, the refusals, and the committed file."""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pytest

from lab import experiments, model, predict, results
from lab.__main__ import main

H100 = "h100-80gb-hbm3"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def rows():
    return {r["id"]: r for r in predict.predict(H100)}


def _ref(experiment, **match):
    return predict.ref_row(experiment, **match)


def test_bandwidth_bound_rates_and_times_scale_by_the_datasheet_bandwidths(rows):
    """The streaming read, the copy and the memcpy keep their share of the datasheet
    bandwidth: 3.35 / 4.8 of the H200's rate; the decode floor takes 4.8 / 3.35 of its time."""
    for kernel in ("stream_read", "copy", "memcpy_d2d"):
        r = rows[f"ch0.{kernel}_gbps"]
        assert r["rule"] == "bandwidth"
        assert r["reference"] == _ref("roofline", kernel=kernel)["gbps"]
        assert r["predicted"] == pytest.approx(r["reference"] * 3.35 / 4.8, rel=1e-12)
    floor = rows["ch6_1.decode_m1_floor_us"]
    assert floor["predicted"] == pytest.approx(floor["reference"] * 4.8 / 3.35, rel=1e-12)
    assert rows["ch0.read_share"]["predicted"] == pytest.approx(
        rows["ch0.stream_read_gbps"]["predicted"] / 3350, rel=1e-12)


def test_a_kernel_at_the_read_roof_takes_4_8_over_3_35_of_its_time():
    s = predict.Scales(H100)
    nbytes = 2 * 4096 * 4096                             # FP16 weights of the decode shape
    at_roof = nbytes / (s.ref_read * 1e9) * 1e3          # ms, moving them at the read roof
    t, rule = s.time(at_roof, nbytes)
    assert rule == "latency+bandwidth"
    assert t == pytest.approx(at_roof * 4.8 / 3.35, rel=1e-12)
    # a fixed part is carried over unchanged, only the bytes slow down
    t, rule = s.time(at_roof + 0.005, nbytes)
    assert rule == "latency+bandwidth"
    assert t == pytest.approx(0.005 + at_roof * 4.8 / 3.35, rel=1e-12)
    # far below the roof: compute-bound, the same time (same SMs, same clock)
    t, rule = s.time(100 * at_roof, nbytes)
    assert (rule, t) == ("roofline", pytest.approx(100 * at_roof, rel=1e-12))


def test_compute_bound_quantities_keep_the_h200_values(rows):
    """Same SMs, same clock, same tensor roof: cuBLAS FP16 at 4096³, the FMA roof and the
    ratios to cuBLAS are the H200's."""
    assert predict.Scales(H100).compute == 1.0
    for qid in ("ch0.fma_tflops", "ch5.cublas_fp16_4096_ms", "ch5.tc_fp16_ratio_4096",
                "ch7.wgmma_cluster_fp16_ratio_8192", "ch8.measured_tensor_ms",
                "ch9.clock_cublas_fp16_mhz"):
        assert rows[qid]["predicted"] == pytest.approx(rows[qid]["reference"], rel=1e-12), qid
    assert rows["ch5.cublas_fp16_4096_ms"]["reference"] == _ref(
        "tensor_cores", part="ladder", kernel="cublas_fp16")["median_ms"]


def test_the_ridges_rise_as_the_bandwidth_falls(rows):
    r = rows["ch0.ridge_fp32"]
    assert r["predicted"] == pytest.approx(r["reference"] * 4.8 / 3.35, rel=1e-12)
    assert rows["ch6_1.fp16_ridge"]["predicted"] == pytest.approx(
        rows["ch6_1.fp16_ridge"]["reference"] * 4.8 / 3.35, rel=1e-12)
    assert rows["ch6_1.m_cross"]["predicted"] > rows["ch6_1.m_cross"]["reference"]


def test_chapter_8s_model_slows_where_it_is_hbm_bound_and_nowhere_else(rows):
    assert rows["ch8.model_naive_ms"]["predicted"] == pytest.approx(
        rows["ch8.model_naive_ms"]["reference"] * 4.8 / 3.35, rel=1e-12)
    assert rows["ch8.model_tensor_ms"]["predicted"] > rows["ch8.model_tensor_ms"]["reference"]
    assert rows["ch8.model_shared_ms"]["predicted"] == pytest.approx(
        rows["ch8.model_shared_ms"]["reference"], rel=1e-12)
    assert "ch8.ratio_shared" not in rows                   # unchanged ratios are not repeated
    assert rows["ch8.tc_min_l2"]["predicted"] > rows["ch8.tc_min_l2"]["reference"]


def test_the_wave_counts_at_4097(rows):
    """tc_fp16's 128×128 tiles at 4097²: 33² = 1,089 tiles on 132 SMs × 2 blocks = 264 slots,
    five waves, 33 tiles in the last."""
    assert (rows["ch6_1.w4097_waves"]["predicted"], rows["ch6_1.w4097_last"]["predicted"]) == \
        (5, 33)
    assert rows["ch6_1.w4097_waves"]["rule"] == "count"


def test_a_gpu_with_other_sms_and_bandwidth_moves_the_waves_and_the_roofs(monkeypatch):
    """A made-up GPU with half the SMs and the H200's bandwidth: the FMA roof halves, the read
    roof is the H200's, and 1,089 tiles on 66 × 2 slots take nine waves."""
    half = {**model.DATASHEET["H100"], "sms": 66, "hbm_gbps": 4800.0}
    monkeypatch.setitem(model.DATASHEET, "HALF", half)
    monkeypatch.setitem(predict.TARGETS, "half-gpu", {**predict.TARGETS[H100], "sheet": "HALF",
                                                      "gpu": "Half GPU"})
    got = {r["id"]: r for r in predict.predict("half-gpu")}
    assert got["ch0.fma_tflops"]["predicted"] == pytest.approx(
        got["ch0.fma_tflops"]["reference"] / 2, rel=1e-12)
    assert got["ch0.stream_read_gbps"]["predicted"] == pytest.approx(
        got["ch0.stream_read_gbps"]["reference"], rel=1e-12)
    assert got["ch6_1.w4097_waves"]["predicted"] == 9 == math.ceil(1089 / 132)
    assert got["ch6_1.w4097_last"]["predicted"] == 1089 - 8 * 132
    assert got["ch5.cublas_fp16_4096_ms"]["predicted"] == pytest.approx(
        2 * got["ch5.cublas_fp16_4096_ms"]["reference"], rel=1e-12)


def test_an_unknown_gpu_and_the_reference_are_refused():
    with pytest.raises(ValueError, match=r"no datasheet to predict GPU 'a100'.*"
                                         r"predictions can be made for: h100-80gb-hbm3"):
        predict.predict("a100")
    with pytest.raises(ValueError, match="'h200' is the reference GPU"):
        predict.predict("h200")


def test_no_prediction_reads_the_target_gpus_results(monkeypatch):
    read = []
    load = results.load

    def spy(experiment, gpu=None, root=None):
        read.append((experiment, gpu))
        return load(experiment, gpu, root)

    monkeypatch.setattr(results, "load", spy)
    predict.predict(H100)
    assert read and {gpu for _, gpu in read} == {"h200"}
    assert {e for e, _ in read} <= set(predict.read_files())


def test_every_quantity_names_its_page_rule_source_and_comparison(rows):
    assert len(rows) >= 20
    known = set(experiments.names())
    chapters = "\n".join(p.read_text() for p in (ROOT / "lab" / "chapters").rglob("*.py"))
    for qid, r in rows.items():
        assert re.fullmatch(r"[a-z0-9_]+\.[a-z0-9_]+", qid), qid
        assert (ROOT / r["page"]).is_file(), (qid, r["page"])
        assert r["rule"] in predict.RULES and r["what"] and r["why"] and r["unit"], qid
        for src in r["reference_sources"]:
            assert src["file"].startswith("lab/results/h200/") or src["file"].startswith(
                "lab/facts/"), qid
        if r["compare"]:
            assert r["compare"]["experiment"] in known, qid
            assert r["compare"]["file"] == \
                f"lab/results/{H100}/{r['compare']['experiment']}.json", qid
        if r["glue"]:                          # the page glues it by this name
            assert f'"{r["glue"]}"' in chapters, (qid, r["glue"])
        if "low" in r:
            assert r["low"] <= r["predicted"] <= r["high"], qid
    assert sum(r["compare"] is not None for r in rows.values()) >= 20


def test_the_cli_writes_once_and_refuses_to_overwrite(tmp_path, capsys):
    assert main(["predict", H100, "--out", str(tmp_path)]) == 0
    path = tmp_path / H100 / "predictions.json"
    data = results.load_path(path, folder=H100)
    assert data["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert data["command"] == f"python -m lab predict {H100} --out DIR"
    assert "ch6_1.decode_m1_cublas_us" in capsys.readouterr().out
    before = path.read_bytes()
    assert main(["predict", H100, "--out", str(tmp_path)]) == 2
    assert "predictions are made once" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert main(["predict", H100, "--out", str(tmp_path), "--force"]) == 0
    assert main(["predict", "a100", "--out", str(tmp_path)]) == 2
    assert "no datasheet to predict GPU 'a100'" in capsys.readouterr().err


def test_the_committed_predictions_are_what_the_code_predicts_from_their_files():
    """The committed file validates in the H100's folder; while the H200 files it was made
    from and the code that made it are unchanged (their SHA-256 in its parameters), every row
    is what predict() gives. Once either changed the committed predictions stand as made:
    they are never written again after the GPU is measured."""
    path = results.path_for(predict.EXPERIMENT, H100)
    data = results.load_path(path, folder=H100)
    files = {**data["parameters"]["reference_files"], **data["parameters"]["code"]}
    assert set(data["parameters"]["code"]) == {"lab/predict.py", "lab/model.py"}
    now = {f: hashlib.sha256((ROOT / f).read_bytes()).hexdigest() for f in files}
    if now != files:
        pytest.skip("made from other H200 results or by another version of lab.predict")
    assert set(data["parameters"]["reference_files"]) == {
        predict.reference_file(n) for n in predict.read_files()}
    committed = {r["id"]: r for r in data["rows"]}
    fresh = {r["id"]: json.loads(json.dumps(r)) for r in predict.predict(H100)}
    assert committed.keys() == fresh.keys()
    for qid, r in fresh.items():
        assert committed[qid]["predicted"] == pytest.approx(r["predicted"], rel=1e-9), qid
        assert committed[qid]["rule"] == r["rule"], qid


def _as_target(tmp_path) -> Path:
    """A results root whose H100 folder holds the H200's files relabelled as the H100's: what
    the H100's measurements would be if every prediction were "the same as the H200"."""
    import shutil

    shutil.copytree(results.RESULTS_DIR / "h200", tmp_path / "h200")
    (tmp_path / H100).mkdir()
    for path in (tmp_path / "h200").glob("*.json"):
        data = json.loads(path.read_text())
        data["provenance"].update(gpu="NVIDIA H100 80GB HBM3", max_sm_clock_mhz=None)
        (tmp_path / H100 / path.name).write_text(json.dumps(data))
    return tmp_path


def test_every_comparison_reads_one_row_of_the_targets_files(rows, tmp_path):
    """Each quantity's ``compare`` resolves to exactly one row (or a provenance field) of the
    H100's files and gives the quantity in its own unit: on a stand-in H100 folder made of the
    H200's files, every comparable quantity reads back its H200 value (the read share against
    the H100's datasheet: 4.8 / 3.35 of it)."""
    root = _as_target(tmp_path)
    seen = 0
    for qid, r in rows.items():
        got = predict.measured(r, root)
        if r["compare"] is None:
            assert got is None
            continue
        want = r["reference"] * (4.8 / 3.35 if qid == "ch0.read_share" else 1.0)
        assert got == pytest.approx(want, rel=1e-9), qid
        seen += 1
    assert seen >= 50


def test_a_comparison_before_the_target_is_measured_says_so(rows, tmp_path):
    (tmp_path / H100).mkdir()
    with pytest.raises(results.ResultsMissing, match="roofline.json: no such results file"):
        predict.measured(rows["ch0.stream_read_gbps"], tmp_path)
