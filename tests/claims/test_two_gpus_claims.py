"""What the "Two GPUs, one course" page says of the predictions and the H100's measurements
holds in the committed files."""
from __future__ import annotations

from lab import results
from lab.chapters import two_gpus

H100 = two_gpus.TARGET


def _rows():
    return {r["id"]: r for r in two_gpus.rows()}


def test_the_predictions_were_made_before_any_file_they_are_compared_with():
    made = two_gpus.predictions()["provenance"]["date"]
    compared = {r["compare"]["experiment"] for r in two_gpus.predictions()["rows"] if r["compare"]}
    assert compared
    for name in compared:
        assert results.load(name, gpu=H100)["provenance"]["date"] > made, name


def test_at_least_twenty_quantities_are_compared_and_one_misses():
    rows = list(_rows().values())
    v = two_gpus.values(rows)
    assert int(v["n_compared"]) >= 20
    missed = [r for r in two_gpus.compared(rows) if r["status"] != "within"]
    assert [r["id"] for r in missed] == [two_gpus.worst(rows, 1)[0]["id"]]


def test_the_miss_is_ours_not_the_gpus():
    """The one miss moved on the H200 too (the code changed since the prediction), and is still
    outside the band against today's H200, while the library's same call kept its prediction on
    both GPUs and ran no slower on the H100."""
    (miss,) = two_gpus.worst(list(_rows().values()), 1)
    assert miss["status"] != "within"
    assert abs(miss["h200_now"] / miss["h200"] - 1) > two_gpus.WITHIN
    assert miss["vs_h200_now"] > 1 + two_gpus.WITHIN
    spec = next(r for r in two_gpus.predictions()["rows"] if r["id"] == miss["id"])
    h100, h200 = two_gpus.yardstick(spec)
    assert abs(h100 / h200 - 1) <= two_gpus.WITHIN and h100 <= h200
    assert miss["h100"] > h100 and miss["h200_now"] > h200


def test_bandwidth_moved_and_each_gpu_keeps_its_share_of_the_datasheet():
    q = _rows()
    par = two_gpus.predictions()["parameters"]["datasheets"]
    read = q["ch0.stream_read_gbps"]
    share_h100 = read["h100"] / par[H100]["hbm_gbps"]
    share_h200 = read["h200"] / par[two_gpus.REFERENCE]["hbm_gbps"]
    assert abs(share_h100 / share_h200 - 1) < 0.01
    copy = q["ch0.copy_gbps"]
    assert copy["predicted"] < copy["h100"] and copy["status"] == "within"
    assert q["ch0.ridge_fp32"]["h100"] > q["ch0.ridge_fp32"]["h200"]


def test_decode_sits_near_the_latency_end_and_gains_less_from_faster_memory():
    q = _rows()
    p = {r["id"]: r for r in two_gpus.predictions()["rows"]}["ch6_1.decode_m1_cublas_us"]
    got = q["ch6_1.decode_m1_cublas_us"]["h100"]
    assert p["low"] <= got <= p["high"]
    assert got - p["low"] < p["high"] - got
    v = two_gpus.values()
    assert int(v["m1_share_h100"]) > int(v["m1_share_h200"])


def test_every_roofline_time_and_every_hopper_ratio_met_its_prediction():
    rows = list(_rows().values())
    roof = [r for r in rows if r["rule"] == "roofline"]
    hopper = [r for r in rows if r["id"].startswith("ch7.")]
    assert len(roof) == int(two_gpus.values(rows)["roof_n"]) >= 20 and len(hopper) >= 10
    assert all(r["status"] == "within" for r in roof + hopper)


def test_the_clock_under_cublas_came_out_lower_than_predicted():
    clock = _rows()["ch9.clock_cublas_fp16_mhz"]
    assert clock["h100"] < clock["predicted"] and clock["status"] == "within"


def test_against_todays_h200_the_quantities_predicted_to_stay_stay():
    v = two_gpus.values()
    assert int(v["now_n"]) >= 20
    assert abs(float(v["now_median"]) - 1) < two_gpus.WITHIN / 2


def test_the_page_says_which_files_are_missing_and_why():
    """The page's last section names each experiment without an H100 file, in the book's
    order, with its reason; a file measured later drops out of the sentence."""
    gone = two_gpus.missing()
    line = two_gpus.values()["missing_line"]
    assert all(g in two_gpus.WHY_MISSING for g in gone)
    assert [g for g in two_gpus.WHY_MISSING if g in line] == gone
    for g in gone:
        assert f"{g}, {two_gpus.WHY_MISSING[g]}" in line
