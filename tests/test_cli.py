"""The command line (``python -m lab``): names checked first, nothing-checked is not a pass,
``measure all`` covers every results file the chapters read, and the recorded notebook run
writes a valid results file. Fast: no kernel runs here except where a test says so."""
import inspect
import json
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import lab
from lab import device, experiments, kernels, notebooks, results, tables
import lab.__main__ as cli
from lab.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
needs_no_gpu = pytest.mark.skipif(device.GPU, reason="a GPU is present")


# ----------------------------------------------------------------------------- names first

@pytest.mark.parametrize("argv", [["measure", "nope"], ["measure", "all", "nope"]])
def test_measure_unknown_experiment_is_named_before_anything_else(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unknown experiment 'nope'" in err and "roofline" in err
    assert "needs a GPU" not in err


@needs_no_gpu
def test_measure_all_without_a_gpu_refuses_clearly(capsys):
    assert main(["measure", "all"]) == 2
    err = capsys.readouterr().err
    assert "measure needs a GPU" in err and device.MODE in err


def test_check_unknown_kernel_is_an_error(capsys):
    assert main(["check", "no_such_kernel"]) == 2
    assert "unknown kernel 'no_such_kernel'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- check

@needs_no_gpu
def test_check_of_only_simulator_incapable_kernels_fails(capsys):
    gpu_only = [n for n, s in lab.REGISTRY.items() if not s.simulator][:2]
    assert gpu_only, "expected kernels the simulator cannot run (inline PTX)"
    assert main(["check", *gpu_only]) == 1
    out = capsys.readouterr()
    for name in gpu_only:
        assert re.search(rf"^{name}\s+skipped: needs a GPU: .*simulator", out.out, re.M)
    assert "nothing checked" in out.err
    assert "all kernels passed" not in out.out


# ----------------------------------------------------------------------------- measure all

def _names_read_by_the_chapters() -> set[str]:
    """Experiment names passed to lab.results by the notebooks and the lab modules."""
    call = re.compile(r"results\.\w+\(\s*[\"']([a-z0-9_]+)[\"']")
    member = re.compile(r"[\"']([a-z0-9_]+)[\"']\s+in\s+results\.available")
    texts = []
    for nb in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        texts += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    texts += [p.read_text() for p in (ROOT / "lab").rglob("*.py")]
    return {m for text in texts for rx in (call, member) for m in rx.findall(text)}


def test_measure_all_covers_every_results_file_the_book_reads():
    everything = set(experiments.book_order())
    read = _names_read_by_the_chapters()
    assert {"roofline", "naive_tiled", "tensor_cores", "shapes"} <= read   # the grep works
    missing = read - everything - set(experiments.HISTORICAL)
    assert not missing, f"chapters read results no experiment makes: {sorted(missing)}"
    committed = {p.stem for p in (results.RESULTS_DIR / results.REFERENCE_GPU).glob("*.json")}
    assert committed, "no committed reference results"
    missing = (committed - everything - set(experiments.HISTORICAL)
               - {notebooks.EXPERIMENT, experiments.RUN_RECORD})
    assert not missing, f"reference results no experiment re-makes: {sorted(missing)}"
    for name in experiments.HISTORICAL:
        assert name not in everything


def test_every_experiment_declares_its_needs_and_an_estimate():
    for name in experiments.book_order():
        exp = experiments.info(name)
        module = exp.module
        for attr in ("CHAPTER", "NEEDS", "H200_SECONDS"):
            assert hasattr(module, attr), f"experiment {name} does not declare {attr}"
        assert 0 < exp.h200_seconds <= 600, name
        assert set(exp.needs) <= set(experiments.TOOLS), name
    chapters = [experiments.info(n).chapter for n in experiments.book_order()]
    assert chapters == sorted(chapters, key=kernels.page_order)


@pytest.mark.parametrize("cc,skipped", [
    ((7, 5), {"precision", "tc_tune", "tensor_cores", "wmma", "epilogue", "shapes", "splitk",
             "waves", "hopper", "hopper_profile", "hopper_past", "hopper_streamk",
             "hopper_table", "streamk_trace", "fp8", "clocks", "libraries"}),
    ((8, 6), {"hopper", "hopper_profile", "hopper_past", "hopper_streamk", "hopper_table",
              "streamk_trace", "fp8"}),
    ((9, 0), set()),
    ((10, 0), {"hopper", "hopper_profile", "hopper_past", "hopper_streamk", "hopper_table",
               "streamk_trace", "fp8"})])     # sm_90a code runs on 9.0 alone
def test_experiments_are_skipped_where_their_kernels_cannot_run(monkeypatch, cc, skipped):
    runnable = kernels.runnable
    monkeypatch.setattr(kernels, "runnable", lambda kernel, _=None: runnable(kernel, cc))
    for tool in experiments.TOOLS:
        monkeypatch.setitem(experiments.TOOLS, tool, lambda: None)
    reasons = {n: experiments.skip_reason(n) for n in experiments.book_order()}
    assert {n for n, r in reasons.items() if r} == skipped
    assert all("compute capability" in reasons[n] for n in skipped)


def test_the_gpu_page_lists_every_experiment_with_its_estimate():
    """The GPU page's experiment table is built from the code: every experiment in the order
    `measure all` runs them, with its module's estimate and what it took in the committed
    H200 run of `measure all`."""
    from lab.chapters import gpu

    rows = gpu.rows()
    assert [r["experiment"] for r in rows] == experiments.book_order()
    run = {r["experiment"]: r
           for r in results.load(experiments.RUN_RECORD, gpu="h200")["rows"]}
    for r in rows:
        exp = experiments.info(r["experiment"])
        assert r["estimate_s"] == exp.h200_seconds and r["measures"], r
        recorded = run.get(r["experiment"], {})       # experiments added since: no run times
        assert (r["run_s"], r["held_s"]) == (recorded.get("seconds"), recorded.get("gpu_held_s"))
    assert sum(r["run_s"] is not None for r in rows) == int(gpu.totals()["run_wrote"]) > 0
    text = repr(gpu.table())
    assert all(f"{r['experiment']} " in text for r in rows)
    html = gpu.table()._repr_mimebundle_()["text/html"]     # every row below the fold
    assert all(f'<td>{r["experiment"]}</td>' in html for r in rows)
    assert html.count("<tr>") == 1 + 5 + 1 + len(rows)      # five rows open, all folded
    total = sum(r["estimate_s"] for r in rows) / 60
    assert gpu.totals()["total_min"] == tables.fmt(total, 2)


def _fake_experiment(chapter, run, needs=(), needs_kernels=(), seconds=5, **extra):
    return types.SimpleNamespace(CHAPTER=chapter, NEEDS=needs, NEEDS_KERNELS=needs_kernels,
                                 H200_SECONDS=seconds, run=run, **extra)


def _one_row(**parameters):
    return {"rows": [{"kernel": "k", "median_ms": 1.0, "min_ms": 0.9, "max_ms": 1.1}],
            "parameters": parameters}


@pytest.fixture
def fake_gpu(monkeypatch):
    """A fake GPU of compute capability 7.5 without ncu; ``install(fakes)`` makes ``fakes``
    (name -> module) the only experiments."""
    prov = {**device.provenance(), "gpu": "NVIDIA Fake GPU", "compute_capability": "7.5",
            "sm_count": 40}
    runnable = kernels.runnable
    monkeypatch.setattr(device, "GPU", True)
    monkeypatch.setattr(device, "provenance", lambda: dict(prov))
    monkeypatch.setattr(kernels, "runnable", lambda kernel, cc=None: runnable(kernel, (7, 5)))
    monkeypatch.setitem(experiments.TOOLS, "ncu", lambda: "needs Nsight Compute (ncu)")
    # fakes exist in this process only: run them here unless a test asks for --jobs
    monkeypatch.setattr(cli, "default_jobs", lambda: 1)

    def install(fakes):
        monkeypatch.setattr(experiments, "names", lambda: sorted(fakes))
        monkeypatch.setattr(experiments, "get", lambda name: fakes[name])
    return install


def test_measure_all_skips_runs_saves_as_it_goes_and_summarises(fake_gpu, tmp_path, capsys):
    """One experiment runs, one lacks a tool, one needs a newer GPU, one raises; the first
    file exists before the later experiments run."""
    written_before_boom = []

    def ok_run(progress):
        assert list(progress([1, 2, 3], desc="stage")) == [1, 2, 3]
        return _one_row(size=3)

    def boom_run(progress):
        written_before_boom.append((tmp_path / "fake-gpu" / "fake_ok.json").exists())
        raise AssertionError("check failed before timing")

    fake_gpu({"fake_ok": _fake_experiment("0", ok_run),
              "fake_tool": _fake_experiment("1", ok_run, needs=("ncu",)),
              "fake_cc": _fake_experiment("2", ok_run, needs_kernels=("tc_fp16",)),
              "fake_boom": _fake_experiment("3", boom_run)})
    assert main(["measure", "all", "--out", str(tmp_path)]) == 1     # one failed
    out = capsys.readouterr().out
    assert written_before_boom == [True]
    saved = results.load_path(tmp_path / "fake-gpu" / "fake_ok.json")
    assert saved["rows"][0]["kernel"] == "k" and saved["provenance"]["wall_seconds"] >= 0
    assert saved["command"].startswith("python -m lab measure all")
    assert sorted(p.name for p in (tmp_path / "fake-gpu").iterdir()) == [
        "fake_ok.json", "measure_all.json"]
    run = results.load_path(tmp_path / "fake-gpu" / "measure_all.json")   # the run, recorded
    status = {r["experiment"]: r["status"] for r in run["rows"]}
    assert status == {"fake_ok": "wrote", "fake_tool": "skipped", "fake_cc": "skipped",
                      "fake_boom": "FAILED"}
    assert run["provenance"]["wall_seconds"] >= 0 and run["parameters"]["jobs"] == 1
    assert "check failed" in next(r["note"] for r in run["rows"] if r["status"] == "FAILED")
    assert re.search(r"fake_tool: skipped — needs Nsight Compute", out)
    assert re.search(r"fake_cc: skipped — tc_fp16 needs compute capability 8\.0.* is 7\.5", out)
    assert "fake_boom: FAILED" in out and "check failed before timing" in out
    assert "estimated 10 s on an H200" in out            # the two that run, 5 s each
    assert "1 written, 2 skipped, 1 failed" in out
    assert "LAB_GPU=fake-gpu jupyter-book build ." in out


def test_measure_quick_reaches_only_the_experiments_that_take_it(fake_gpu, tmp_path, capsys):
    seen = {}

    def tune_run(progress, quick=False):
        seen["tune"] = quick
        return _one_row(quick=quick)

    def plain_run(progress):
        seen["plain"] = True
        return _one_row()

    fake_gpu({"fake_plain": _fake_experiment("0", plain_run, seconds=20),
              "fake_tune": _fake_experiment("1", tune_run, seconds=100, H200_SECONDS_QUICK=10)})
    assert main(["measure", "all", "--out", str(tmp_path)]) == 0
    assert seen == {"tune": False, "plain": True}
    assert "estimated 2.0 min on an H200 (with --quick: 30 s)" in capsys.readouterr().out
    assert main(["measure", "all", "--quick", "--out", str(tmp_path)]) == 0
    assert seen == {"tune": True, "plain": True}
    assert "estimated 30 s on an H200 —" in capsys.readouterr().out
    assert results.load_path(tmp_path / "fake-gpu" / "fake_tune.json")["parameters"]["quick"]


def test_measure_quick_skips_an_experiment_whose_quick_file_the_book_cannot_read(fake_gpu,
                                                                                   tmp_path):
    """``QUICK_IN_MEASURE = False``: ``--quick`` runs it in full (its quick run is a
    developer's shortcut whose file lacks rows the chapters read)."""
    seen = {}

    def explore_run(progress, quick=False):
        seen["explore"] = quick
        return _one_row(quick=quick)

    fake_gpu({"fake_explore": _fake_experiment("1", explore_run, QUICK_IN_MEASURE=False)})
    assert main(["measure", "all", "--quick", "--out", str(tmp_path)]) == 0
    assert seen == {"explore": False}


def test_the_real_experiments_that_quick_reaches_keep_every_row():
    """Of the registered experiments, ``--quick`` reaches the two tuning sweeps and the two
    that take one process instead of three; the Hopper ladder, the past-cuBLAS study and FP8,
    whose quick runs leave rows out, are measured in full."""
    from lab import experiments

    reached = {n for n in experiments.names() if experiments.info(n).quick}
    assert reached == {"fp32_tune", "tc_tune", "grouped", "suite"}
    for name in ("hopper", "hopper_past", "fp8"):
        assert "quick" in inspect.signature(experiments.get(name).run).parameters
        assert experiments.get(name).QUICK_IN_MEASURE is False


def test_progress_bar_passes_every_item_through_with_or_without_tqdm(monkeypatch, capsys):
    from lab.__main__ import StageBar

    bar = StageBar("exp")
    assert list(bar(range(3), desc="one")) == [0, 1, 2]
    assert list(bar(iter("ab"), desc="two", total=2)) == ["a", "b"]
    assert bar.bar.n == 2 and "exp: two" in bar.bar.desc
    bar.close()
    monkeypatch.setitem(sys.modules, "tqdm", None)          # tqdm not installed
    assert list(StageBar("exp")(range(4), desc="plain")) == [0, 1, 2, 3]
    assert "exp: plain (4 steps)" in capsys.readouterr().out


def test_measure_with_everything_skipped_does_not_pass(fake_gpu, tmp_path, capsys):
    fake_gpu({"fake_tool": _fake_experiment("0", lambda progress: _one_row(), needs=("ncu",))})
    assert main(["measure", "fake_tool", "--out", str(tmp_path)]) == 1
    assert "nothing was measured" in capsys.readouterr().err
    assert not (tmp_path / "fake-gpu").exists()


# ----------------------------------------------------------------------------- --jobs

# A stand-in for ``python -m lab measure NAME``: notes when it ran, then writes the results
# file (or fails the way measure reports a failure).
CHILD = textwrap.dedent("""
    import json, os, pathlib, sys, time
    name, out, stamps = sys.argv[1], sys.argv[2], sys.argv[3]
    t0 = time.time()
    time.sleep(0.8)
    with open(stamps, "a") as f:
        f.write(json.dumps([name, t0, time.time(), os.environ["LAB_MEASURE_JOBS"],
                            os.environ["LAB_MEASURE_COMMAND"]]) + "\\n")
    if name == "fake_boom":
        print("Traceback ...")
        print("[1/1] fake_boom: FAILED after 0 s — AssertionError: check failed before timing")
        sys.exit(1)
    print("GPU turns: held %d s, waited 2 s" % len(name))
    path = pathlib.Path(out) / "fake-gpu" / (name + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
""")


def test_jobs_run_experiments_side_by_side_and_report_each(fake_gpu, tmp_path, capsys,
                                                           monkeypatch):
    stamps = tmp_path / "stamps.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    commands = []

    def child_command(name, lock, *, quick, root):
        commands.append((name, quick))
        return [sys.executable, str(script), name, str(root), str(stamps)]

    monkeypatch.setattr(cli, "_child_command", child_command)
    run = lambda progress: _one_row()                                    # noqa: E731
    fake_gpu({"fake_a": _fake_experiment("0", run), "fake_b": _fake_experiment("1", run),
              "fake_boom": _fake_experiment("2", run), "fake_c": _fake_experiment("3", run),
              "fake_tool": _fake_experiment("4", run, needs=("ncu",))})
    out_dir = tmp_path / "out"
    assert main(["measure", "all", "--jobs", "2", "--out", str(out_dir)]) == 1
    out = capsys.readouterr().out
    assert sorted(commands) == [("fake_a", False), ("fake_b", False), ("fake_boom", False),
                                ("fake_c", False)]                 # the skipped one never starts
    runs = [json.loads(line) for line in stamps.read_text().splitlines()]
    assert {r[3] for r in runs} == {"2"}
    assert {r[4] for r in runs} == {f"python -m lab measure all --jobs 2 --out {out_dir}"}
    # never more than two at once, and at some moment two
    events = sorted([(r[1], 1) for r in runs] + [(r[2], -1) for r in runs])
    live = [sum(e for _, e in events[:i + 1]) for i in range(len(events))]
    assert max(live) == 2
    assert sorted(p.name for p in (out_dir / "fake-gpu").iterdir()) == [
        "fake_a.json", "fake_b.json", "fake_c.json", "measure_all.json"]
    run = {r["experiment"]: r for r in
           results.load_path(out_dir / "fake-gpu" / "measure_all.json")["rows"]}
    assert (run["fake_a"]["gpu_held_s"], run["fake_a"]["gpu_waited_s"]) == (6, 2)
    assert run["fake_tool"]["status"] == "skipped" and run["fake_tool"]["gpu_held_s"] is None
    assert re.search(r"fake_tool: skipped — needs Nsight Compute", out)
    assert re.search(r"fake_boom: FAILED after \d+ s — AssertionError: check failed before "
                     r"timing", out)
    assert "2 experiments at a time" in out
    assert "3 written, 1 skipped, 1 failed" in out


def test_experiments_that_time_the_host_run_last_and_alone(fake_gpu, tmp_path, monkeypatch):
    """``ALONE = True``: with ``--jobs 3`` the others run side by side first; each alone one
    starts only when nothing else runs, and nothing starts beside it."""
    stamps = tmp_path / "stamps.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    monkeypatch.setattr(cli, "_child_command", lambda name, lock, *, quick, root: [
        sys.executable, str(script), name, str(root), str(stamps)])
    run = lambda progress: _one_row()                                    # noqa: E731
    fake_gpu({"fake_a": _fake_experiment("0", run), "fake_host": _fake_experiment(
                  "1", run, ALONE=True, seconds=500),
              "fake_b": _fake_experiment("2", run), "fake_c": _fake_experiment("3", run),
              "fake_host2": _fake_experiment("4", run, ALONE=True)})
    assert main(["measure", "all", "--jobs", "3", "--out", str(tmp_path / "out")]) == 0
    runs = {r[0]: (r[1], r[2]) for r in map(json.loads, stamps.read_text().splitlines())}
    shared = [runs[n] for n in ("fake_a", "fake_b", "fake_c")]
    assert max(start for start, _ in shared) < min(end for _, end in shared)   # side by side
    for name in ("fake_host", "fake_host2"):
        start, end = runs[name]
        assert start >= max(e for _, e in shared)                     # after the others …
        others = [v for n, v in runs.items() if n != name]
        assert all(e <= start or s >= end for s, e in others)         # … and alone
    assert {"alone"} <= set(cli._plan(["fake_host"], False)[0])
    assert cli._plan(["fake_host"], False)[0]["alone"] is True
    assert cli._plan(["fake_a"], False)[0]["alone"] is False


def test_the_real_experiments_that_time_the_host_run_alone():
    from lab import experiments

    alone = {n for n in experiments.names() if getattr(experiments.get(n), "ALONE", False)}
    assert alone == {"launch_cost", "suite", "grouped", "epilogue"}


def test_a_shared_run_says_so_in_the_file(fake_gpu, tmp_path, monkeypatch):
    fake_gpu({"fake_a": _fake_experiment("0", lambda progress: _one_row())})
    monkeypatch.setenv("LAB_MEASURE_JOBS", "3")
    monkeypatch.setenv("LAB_MEASURE_COMMAND", "python -m lab measure all --jobs 3")
    assert main(["measure", "fake_a", "--jobs", "1", "--out", str(tmp_path)]) == 0
    saved = results.load_path(tmp_path / "fake-gpu" / "fake_a.json")
    assert saved["provenance"]["measure_jobs"] == 3
    assert saved["command"] == "python -m lab measure all --jobs 3"


def test_jobs_default_to_four_at_most_one_per_core_and_per_20_gb():
    gb = 10 ** 9
    assert cli.default_jobs(141 * gb, 16) == 4          # an H200
    assert cli.default_jobs(141 * gb, 2) == 2           # ... on a two-core host
    assert cli.default_jobs(40 * gb, 8) == 2            # an A100 40 GB
    assert cli.default_jobs(15 * gb, 2) == 1            # a T4: one at a time, in this process


def test_one_job_runs_in_this_process_and_jobs_must_be_positive(fake_gpu, tmp_path, capsys):
    fake_gpu({"fake_a": _fake_experiment("0", lambda progress: _one_row()),
              "fake_b": _fake_experiment("1", lambda progress: _one_row())})
    assert main(["measure", "all", "--jobs", "1", "--out", str(tmp_path)]) == 0  # here
    assert json.loads((tmp_path / "fake-gpu" / "fake_b.json").read_text())["rows"]
    assert "at a time" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["measure", "all", "--jobs", "0", "--out", str(tmp_path)])
    assert "must be 1 or more, got 0" in capsys.readouterr().err


# ----------------------------------------------------------------------------- notebooks

#: The JUnit report nbval wrote for a four-cell notebook (ANSI colours as pytest escapes them):
#: cell 0 passes, cell 1's output differs, cell 2 is NBVAL_SKIP, cell 3 raises.
JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite
name="pytest" errors="0" failures="2" skipped="1" tests="4" time="0.953"><testcase
classname="t.ipynb" name="Cell 0" time="0.595" /><testcase classname="t.ipynb" name="Cell 1"
time="0.006"><failure message="#x1B[91mNotebook cell execution failed#x1B[0m&#10;#x1B[94mCell 1:
Cell outputs differ&#10;&#10;Input:&#10;#x1B[0mprint(2)&#10;">details</failure></testcase>
<testcase classname="t.ipynb" name="Cell 2" time="0.000"><skipped type="pytest.skip"
message="Skipped">Skipped</skipped></testcase><testcase classname="t.ipynb" name="Cell 3"
time="0.302"><failure message="#x1B[91mNotebook cell execution failed#x1B[0m&#10;#x1B[94mCell 3:
Cell execution caused an exception&#10;&#10;#x1B[94mTraceback:#x1B[0m&#10;
#x1B[31mValueError#x1B[39m: boom&#10;">details</failure></testcase></testsuite></testsuites>"""


def test_parse_junit_counts_cells_and_names_the_first_failure():
    row = notebooks.parse_junit(JUNIT, "t.ipynb", 12.34, 1)
    assert (row["cells"], row["passed"], row["failed"], row["skipped"]) == (4, 1, 2, 1)
    assert row["seconds"] == 12.3 and row["returncode"] == 1 and row["error"] is None
    assert row["first_failure"] == "Cell 1: Cell outputs differ"
    assert not notebooks.ok(row)
    only_cell_3 = re.sub(r'<testcase classname="t.ipynb" name="Cell 1".*?</testcase>', "",
                         JUNIT, flags=re.S)
    assert notebooks.parse_junit(only_cell_3, "t.ipynb", 1.0, 1)["first_failure"] == (
        "Cell 3: Cell execution caused an exception: ValueError: boom")
    clean = notebooks.parse_junit(
        '<testsuites><testsuite><testcase name="Cell 0"/><testcase name="Cell 1"/>'
        "</testsuite></testsuites>", "c.ipynb", 1.0, 0)
    assert (clean["cells"], clean["passed"], clean["failed"]) == (2, 2, 0)
    assert notebooks.ok(clean)


@pytest.mark.parametrize("text,problem", [("not xml <", "not XML"),
                                          ("<html></html>", "root is <html>")])
def test_parse_junit_rejects_what_is_not_a_report(text, problem):
    with pytest.raises(ValueError, match=problem):
        notebooks.parse_junit(text, "t.ipynb", 1.0, 0)


def test_notebooks_file_is_a_valid_results_file_and_merges_split_runs(tmp_path):
    prov = {**device.provenance(), "gpu": "NVIDIA Fake GPU"}
    first = [notebooks.parse_junit(JUNIT, "00_a.ipynb", 3.0, 1),
             notebooks.parse_junit(JUNIT, "01_b.ipynb", 4.0, 1)]
    path = notebooks.save(first, command="python -m lab notebooks", root=tmp_path,
                          provenance=prov, parameters={"notebook_timeout_s": 60})
    assert path == tmp_path / "fake-gpu" / "notebooks.json"
    data = results.load_path(path)
    assert data["row_fields"] == list(notebooks.ROW_FIELDS)
    assert [r["notebook"] for r in data["rows"]] == ["00_a.ipynb", "01_b.ipynb"]
    # a second call re-runs one notebook: the other's row is kept, the re-run one replaced
    again = [dict(first[1], failed=0, passed=3, first_failure=None, seconds=9.0)]
    later = {**prov, "date": "2031-01-02T03:04:05+00:00"}
    notebooks.save(again, command="python -m lab notebooks 01_b", root=tmp_path,
                   provenance=later, parameters={})
    rows = {r["notebook"]: r for r in results.load_path(path)["rows"]}
    assert set(rows) == {"00_a.ipynb", "01_b.ipynb"} and rows["01_b.ipynb"]["seconds"] == 9.0
    # each row says when it ran: the kept one its first run's date, the re-run one the new
    assert rows["00_a.ipynb"]["ran"] == prov["date"] != later["date"]
    assert rows["01_b.ipynb"]["ran"] == later["date"]
    # another GPU's earlier file is not merged into this one
    assert notebooks.merge(again, data, "NVIDIA Other GPU") == again
    # a notebook the book no longer has (renamed or split) is not kept from the earlier file
    gone = notebooks.save(again, command="python -m lab notebooks 01_b", root=tmp_path,
                          provenance=later, parameters={}, known=["01_b.ipynb", "02_c.ipynb"])
    assert [r["notebook"] for r in results.load_path(gone)["rows"]] == ["01_b.ipynb"]


def test_notebooks_side_by_side_report_each_and_keep_the_book_order(monkeypatch):
    """``jobs`` > 1: every notebook runs (in its own process, faked here), each reported as it
    ends, the rows in the order the notebooks were given whatever order they ended in."""
    import threading
    import time

    started, ended, lock = [], [], threading.Lock()

    def run_one(path, **kw):
        with lock:
            started.append(path.name)
        time.sleep(0.05 * (3 - int(path.stem[0])))           # the first given ends last
        return {"notebook": path.name, **kw}

    monkeypatch.setattr(notebooks, "run_one", run_one)
    paths = [Path(f"{i}_nb.ipynb") for i in range(3)]
    rows = notebooks.run(paths, report=lambda row: ended.append(row["notebook"]), jobs=3,
                         timeout=5)
    assert [r["notebook"] for r in rows] == [p.name for p in paths]
    assert all(r["timeout"] == 5 for r in rows)
    assert sorted(started) == sorted(ended) == [p.name for p in paths]
    assert ended[0] == "2_nb.ipynb" and ended[-1] == "0_nb.ipynb"


def test_notebooks_refuses_without_gpu_unless_told_where(capsys):
    if device.GPU:
        pytest.skip("a GPU is present")
    assert main(["notebooks"]) == 2
    assert "--out DIR" in capsys.readouterr().err
    assert main(["notebooks", "no_such_chapter", "--out", "x"]) == 2
    assert "unknown notebook 'no_such_chapter'" in capsys.readouterr().err
    assert [p.name for p in notebooks.find(["01_naive", "book/00_machine.ipynb"])] == [
        "01_naive.ipynb", "00_machine.ipynb"]


@pytest.mark.parametrize("command", [["notebooks", "01_naive"], ["measure", "roofline"]])
@pytest.mark.parametrize("under", ["", "sub"])
def test_an_out_that_is_a_file_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys,
                                                               command, under):
    afile = tmp_path / "results.json"
    afile.write_text("{}")
    monkeypatch.setattr(notebooks, "run", lambda *a, **k: pytest.fail("the notebooks ran"))
    with pytest.raises(SystemExit) as info:
        main(command + ["--out", str(afile / under)])
    assert info.value.code == 2
    assert f"{afile} is a file, not a folder" in capsys.readouterr().err


def test_a_damaged_notebooks_file_is_moved_aside_not_replaced(tmp_path):
    prov = {**device.provenance(), "gpu": "NVIDIA Fake GPU"}
    target = tmp_path / "fake-gpu" / "notebooks.json"
    target.parent.mkdir()
    target.write_text('{"rows": [ damaged')
    rows = [notebooks.parse_junit(JUNIT, "00_a.ipynb", 3.0, 1)]
    with pytest.warns(UserWarning, match=r"notebooks\.json: not valid JSON.*moved it to "):
        path = notebooks.save(rows, command="t", root=tmp_path, provenance=prov, parameters={})
    aside = [p for p in target.parent.iterdir() if p.name.startswith("notebooks.json.unreadable-")]
    assert len(aside) == 1, "the damaged file was replaced, not kept"
    assert aside[0].read_text() == '{"rows": [ damaged'
    assert [r["notebook"] for r in results.load_path(path)["rows"]] == ["00_a.ipynb"]


# ----------------------------------------------------------------------------- compare

def _save_run(root, rows, wall):
    prov = {**device.provenance(), "gpu": "NVIDIA Fake GPU", "wall_seconds": wall}
    return results.save("fake_exp", rows, parameters={}, command="python -m lab measure x",
                        provenance=prov, root=root)


def test_compare_matches_rows_on_what_they_measure(tmp_path, capsys):
    row = lambda kernel, n, ms: {"kernel": kernel, "n": n, "median_ms": ms,   # noqa: E731
                                 "min_ms": ms, "max_ms": ms}
    old = _save_run(tmp_path / "old", [row("a", 1024, 1.0), row("a", 2048, 4.0),
                                       row("b", 1024, 2.0), row("gone", 1, 1.0)], 10.0)
    new = _save_run(tmp_path / "new", [row("b", 1024, 3.0), row("a", 2048, 2.0),
                                       row("a", 1024, 1.0), row("added", 1, 1.0)], 12.5)
    c = results.compare(results.load_path(old), results.load_path(new))
    assert (c["matched"], c["only_old"], c["only_new"]) == (3, 1, 1)
    assert c["ratios"] == [0.5, 1.0, 1.5]
    assert main(["compare", str(old.parent), str(new.parent)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("fake_exp"))
    assert line.split()[:6] == ["fake_exp", "3", "3", "1", "1", "1.00"]
    assert "12.5" in line


def test_compare_refuses_folders_with_nothing_in_common(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "empty"), str(tmp_path / "missing")]) == 2
    assert "missing: not a folder of results files" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "empty"), str(tmp_path / "empty")]) == 2
    assert "no experiment in common" in capsys.readouterr().err


# ----------------------------------------------------------------------------- chapters

def test_list_prints_each_chapter_as_the_book_names_its_page(capsys):
    """`python -m lab list` names pages as the book does ("6.1", "7b", "9b"), kernels and
    experiments alike, and lists the experiments in page order: "10" after "9b"."""
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    kernel_lines, experiment_lines = out.split("\nexperiments ", 1)
    chapter_of = {line.split()[0]: line.split()[1] for line in kernel_lines.splitlines()}
    assert chapter_of == {name: f"ch{spec.chapter}" for name, spec in lab.REGISTRY.items()}
    assert (chapter_of["tc_fp16_splitk"], chapter_of["tc_fp16_epilogue"],
            chapter_of["fp8_e4m3"], chapter_of["tc_small_m_fp16"]) == ("ch6.1", "ch6.3", "ch7b",
                                                                      "ch9b")
    listed = [line.split()[:2] for line in experiment_lines.splitlines()[1:]
              if line.startswith("  ")]
    assert [name for name, _ in listed] == experiments.book_order()
    assert listed == [[n, f"ch{experiments.info(n).chapter}"] for n in experiments.book_order()]
    chapters = dict(listed)
    assert (chapters["waves"], chapters["shapes"], chapters["epilogue"], chapters["fp8"],
            chapters["suite"], chapters["multi_gpu"]) == ("ch6.1", "ch6.2", "ch6.3", "ch7b",
                                                          "ch9b", "ch10")
    order = [name for name, _ in listed]
    assert order.index("suite") < order.index("multi_gpu")        # page order, not "10" < "9b"


@pytest.mark.parametrize("chapter", [6, "6", "11", "7c"])
def test_an_experiment_on_no_page_is_refused_naming_it(monkeypatch, chapter):
    fake = _fake_experiment(chapter, lambda progress: _one_row())
    monkeypatch.setattr(experiments, "names", lambda: ["fake_exp"])
    monkeypatch.setattr(experiments, "get", lambda name: fake)
    with pytest.raises(ValueError, match=re.escape(
            f"experiment 'fake_exp': chapter {chapter!r} is not a page of the book")):
        experiments.info("fake_exp")
    with pytest.raises(ValueError, match="fake_exp"):
        experiments.book_order()
    del fake.CHAPTER
    with pytest.raises(ValueError, match="experiment 'fake_exp' declares no CHAPTER"):
        experiments.info("fake_exp")


def test_the_gpu_page_names_each_experiments_page_and_what_it_measures():
    """The GPU page's "ch." column holds the page each experiment feeds, in page order, and
    "measures" is the sentence after the docstring's colon even where a chapter such as 6.1
    (a period inside a number) is named before it."""
    from lab.chapters import gpu

    rows = gpu.rows()
    assert [r["chapter"] for r in rows] == sorted((r["chapter"] for r in rows),
                                                  key=kernels.page_order)
    by_name = {r["experiment"]: r for r in rows}
    assert (by_name["splitk"]["chapter"], by_name["fp8"]["chapter"],
            by_name["launch_cost"]["chapter"]) == ("6.1", "7b", "9b")
    assert by_name["splitk"]["measures"] == ("split-K measured, its non-determinism counted, "
                                             "and small K")
    assert not [r["experiment"] for r in rows if r["measures"].startswith("Experiment")]


# ----------------------------------------------------------------------------- the module runs

def test_cli_runs_as_a_module():
    out = subprocess.run([sys.executable, "-m", "lab", "list"], capture_output=True, text=True)
    assert out.returncode == 0 and "naive" in out.stdout


def test_cli_check_passes_a_correct_kernel(capsys):
    from lab.__main__ import main
    assert main(["check", "naive"]) == 0
    assert "all kernels passed" in capsys.readouterr().out


def test_compile_refuses_an_unknown_kernel_before_compiling(capsys, monkeypatch):
    """`python -m lab compile nope`: one line naming the kernel, no traceback, nothing compiled."""
    from lab import compiler

    monkeypatch.setattr(compiler, "table", lambda names: pytest.fail("compiled before refusing"))
    assert main(["compile", "naive", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown kernel 'nope'") and "Traceback" not in err


def test_a_measure_all_in_parts_records_the_whole(fake_gpu, tmp_path, capsys, monkeypatch):
    """--until leaves the experiments it had no time to start (listed, recorded as left); the
    next part with --missing keeps what the first wrote (its seconds from the first record)
    and measures only the rest; its record covers every experiment."""
    ran = []
    clock = {"now": 0.0}
    monkeypatch.setattr(cli.time, "perf_counter", lambda: clock["now"])

    def run_for(name, seconds):
        def run(progress):
            ran.append(name)
            clock["now"] += seconds
            return _one_row(name=name)
        return run

    fake_gpu({"fake_a": _fake_experiment("0", run_for("fake_a", 40)),
              "fake_b": _fake_experiment("1", run_for("fake_b", 40)),
              "fake_c": _fake_experiment("2", run_for("fake_c", 40)),
              "fake_tool": _fake_experiment("3", run_for("fake_tool", 1), needs=("ncu",))})
    assert main(["measure", "all", "--until", "60", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ran == ["fake_a", "fake_b"]                  # fake_c would start at 80 s
    assert "fake_c: left — not started: 60 s had passed" in out
    assert "2 written, 1 skipped, 0 failed, 1 left for a run with --missing" in out
    first = results.load_path(tmp_path / "fake-gpu" / "measure_all.json")
    assert {r["experiment"]: r["status"] for r in first["rows"]} == {
        "fake_a": "wrote", "fake_b": "wrote", "fake_c": "left", "fake_tool": "skipped"}
    assert main(["measure", "all", "--missing", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ran == ["fake_a", "fake_b", "fake_c"]
    assert re.search(r"fake_a: kept — measured \d{4}-", out)
    whole = results.load_path(tmp_path / "fake-gpu" / "measure_all.json")
    rows = {r["experiment"]: r for r in whole["rows"]}
    assert {e: r["status"] for e, r in rows.items()} == {
        "fake_a": "kept", "fake_b": "kept", "fake_c": "wrote", "fake_tool": "skipped"}
    assert rows["fake_a"]["seconds"] == rows["fake_b"]["seconds"] == rows["fake_c"]["seconds"] == 40
    assert main(["measure", "all", "--missing", "--out", str(tmp_path)]) == 1   # nothing left
    assert "already measured (--missing)" in capsys.readouterr().err
    assert ran == ["fake_a", "fake_b", "fake_c"]
