"""The evidence boxes beside the headlines of chapters 7.2, 7b and 10: the word each range
supports, and every row computed from the results files."""
import pytest

from lab.chapters.common import verdict_word


@pytest.mark.parametrize("lowest, highest, word", [(1.002, 1.004, "past"), (0.998, 1.003, "level"),
                                                   (1.0, 1.01, "level"), (0.95, 0.99, "behind")])
def test_past_only_when_the_lowest_process_is_above_one(lowest, highest, word):
    assert verdict_word(lowest, highest) == word


def test_chapter_7_2_evidence_is_the_tile_table_run():
    from lab.chapters.ch7 import s7_table
    from lab.chapters.ch7.s5_past import summary
    from lab import results

    rows = s7_table.evidence_rows()
    assert len(rows) == 8
    data = results.load("hopper_table")
    r18 = summary(s7_table.TABLE, "float16", 4096, data)
    assert rows[0]["ratio"] == r18["ratio"] and rows[0]["lowest"] == r18["ratio_min"]
    assert rows[0]["ours"] / rows[0]["theirs"] == pytest.approx(rows[0]["ratio"], rel=0.01)
    for r in rows:
        assert r["lowest"] <= r["ratio"] <= r["highest"]
        assert r["mhz_ours"] > 1000 and r["mhz_theirs"] > 1000
    text = repr(s7_table.evidence_box())
    past = int(s7_table.evidence_values()["ev_past_rows"].split()[0])
    assert "GPU-only" in text and text.count(" past") >= past


def test_chapter_7b_and_10_boxes_name_their_yardstick_and_timing():
    from lab.chapters import ch7b, ch10

    box7b = repr(ch7b.evidence_box())
    assert "cuBLASLt" in box7b and "fast accumulation" in box7b and "GPU-only" in box7b
    box10 = repr(ch10.evidence_box())
    assert "not recorded" in box10 and "repetitions" in box10
    words = [r for r in ch10.s5_measured.evidence_rows()]
    assert any(verdict_word(r["lowest"], r["highest"]) == "behind" for r in words)


def test_chapter_9b_evidence_is_the_suite():
    """The geomean rows: each side's geomean TFLOP/s divide to the geomean ratio (within the
    gap between a median of ratios and a ratio of medians), the range holds the median, the
    word follows the range; the single rows are the suite's own."""
    from lab.chapters import ch9b
    from lab.chapters.ch9b import s1_result as S

    rows = ch9b.evidence_rows()
    assert len(rows) == 4
    for r in rows:
        assert r["lowest"] <= r["ratio"] <= r["highest"]
        assert r["ours"] / r["theirs"] == pytest.approx(r["ratio"], rel=0.02)
    assert rows[0]["ratio"] == pytest.approx(float(ch9b.values()["result_geo_gpu"]), abs=5e-4)
    assert rows[1]["ratio"] == pytest.approx(float(ch9b.values()["result_geo_loop"]), abs=5e-4)
    square = next(x for x in S.rows("gpu_only", "float16") if x["group"] == "square"
                  and x["m"] == 8192)
    assert rows[2]["ratio"] == square["ratio_to_cublas"]
    text = repr(ch9b.evidence_box())
    assert "torch.mm" in text and "tight loop" in text


def test_headlines_name_the_gpu_their_file_was_measured_on(monkeypatch):
    """The 7.2 and 7b evidence boxes and 7.1's ladder figure name the GPU of the results they
    draw (a book built from another GPU's files must not say "H200")."""
    import matplotlib.pyplot as plt

    from lab import results
    from lab.chapters import ch7, ch7b
    from lab.chapters.ch7 import s7_table

    real = results.load

    def load(name, *args, **kwargs):
        data = dict(real(name, *args, **kwargs))
        data["provenance"] = {**data["provenance"], "gpu": "NVIDIA Test GPU"}
        return data

    monkeypatch.setattr(results, "load", load)
    for box in (s7_table.evidence_box(), ch7b.evidence_box()):
        assert "on one Test GPU" in repr(box) and "H200" not in repr(box)
    fig = ch7.ladder_figure()
    assert "on the Test GPU" in fig._suptitle.get_text()
    plt.close(fig)
