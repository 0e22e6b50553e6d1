"""The record of the checks a GPU ran, tied to the kernel code it checked.

The CUDA simulator cannot run the tensor-core and Hopper kernels, so only a GPU checks them, and
a change to their sources would otherwise pass every CPU test. ``python -m lab check --record``
on a GPU checks every registered kernel that runs there at :func:`lab.kernels.shapes_for`'s GPU
shapes, and (on compute capability 9.0) ``lab.gemm``'s configurations that no rung registers
(:func:`lab.gemm.variants`) past their tile edges and the Hopper grouped kernels
(:func:`lab.grouped.hopper_configs`) on groups of 0, 1 and a tile's rows ± 1, each shape
**twice** through one launcher on fresh inputs: a fault that a first call hides (a ticket
counter left unreset, a workspace reused dirty) shows on the second. What passed is written to
``lab/facts/gpu_checks.json`` under the GPU's name with :func:`lab.compiler.code_digest` of the
sources checked: their code, so that a docstring or a comment edited later keeps the record
(the sources' bytes are kept too, as ``source_digest``).

:func:`problems` lists what the newest record lacks for the current sources: no record, a record
of other sources, a GPU-only kernel (one the simulator cannot run) that runs on the recorded GPU
but was not checked twice at every shape. ``tests/test_facts.py`` fails on any of them, so a
kernel change lands with a fresh record.
"""
from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

#: Where the records live (one per GPU, the newest per GPU kept).
PATH = Path(__file__).resolve().parent / "facts" / "gpu_checks.json"
#: Calls per shape: the second one runs on what the first left behind.
CALLS = 2


def load(path: Path | None = None) -> dict:
    """The records file (``{"records": {gpu: record}}``); an empty one when there is none yet.
    A file that is not such a JSON object raises ValueError naming it."""
    path = Path(path or PATH)
    if not path.exists():
        return {"records": {}}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not JSON ({e}); check the kernels on a GPU with "
                         "`python -m lab check --record` to write it again") from None
    if not isinstance(data, dict) or not isinstance(data.get("records"), dict):
        raise ValueError(f"{path} holds no 'records' object")
    return data


def record(gpu: str, cc: tuple[int, int], checked: dict[str, dict], skipped: dict[str, str],
           *, digest: str | None = None, path: Path | None = None) -> Path:
    """Write the record of one GPU's checks: ``checked`` maps a kernel (or a variant's label) to
    ``{"shapes": [[m, n, k], ...], "calls": CALLS, "passed": bool}``; ``skipped`` maps a kernel
    that cannot run on this GPU to the reason. Refused (ValueError) if any check failed, if a
    kernel was called fewer than :data:`CALLS` times a shape, or if nothing was checked: a
    record says the sources passed. ``digest`` (:func:`lab.compiler.code_digest` unless given)
    is what :func:`problems` matches the current sources against."""
    from lab import compiler

    if not checked:
        raise ValueError("nothing was checked: a GPU check record needs at least one kernel")
    failed = sorted(name for name, c in checked.items() if not c.get("passed"))
    if failed:
        raise ValueError(f"not recorded: {len(failed)} kernel(s) failed their checks "
                         f"({', '.join(failed)}); a record says the sources passed")
    short = sorted(name for name, c in checked.items() if c.get("calls", 0) < CALLS)
    if short:
        raise ValueError(f"not recorded: {', '.join(short)} called fewer than {CALLS} times a "
                         "shape")
    path = Path(path or PATH)
    data = load(path) if path.exists() else {"records": {}}
    data["records"][gpu] = {
        "code_digest": digest or compiler.code_digest(),
        "source_digest": compiler.source_digest(),
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "calls_per_shape": CALLS,
        "checked": {name: checked[name] for name in sorted(checked)},
        "skipped": dict(sorted(skipped.items())),
    }
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def gpu_only(cc: tuple[int, int]) -> dict[str, int]:
    """The registered kernels the simulator cannot run that run on a GPU of capability ``cc``,
    each with the number of shapes ``python -m lab check`` checks it at on a GPU."""
    from lab import kernels

    out = {}
    for name, spec in kernels.REGISTRY.items():
        if spec.simulator or not kernels.runnable(spec, cc)[0]:
            continue
        out[name] = len(kernels.shapes_for(spec, gpu=True))
    return out


def grouped_names(cc: tuple[int, int] | None) -> list[str]:
    """The record's names of the Hopper grouped kernels (:func:`lab.grouped.hopper_configs`)
    that ``lab check --record`` checks on a GPU of capability ``cc`` (none off Hopper)."""
    from lab import grouped

    if not cc or cc[0] != 9:
        return []
    return [f"lab.grouped_gemm {cfg.label}" for cfg in grouped.hopper_configs()]


def check_grouped(index: int) -> tuple[int, dict]:
    """The ``index``-th Hopper grouped kernel on its groups (:func:`lab.grouped.check_hopper`),
    :data:`CALLS` times each through one launcher: (failed checks, its record entry)."""
    from lab import grouped

    cfg = grouped.hopper_configs()[index]
    entry, lines = grouped.check_hopper(cfg, CALLS)
    for line in lines:
        print(line, flush=True)
    print(f"grouped {cfg.label:<40} {len(entry['shapes'])} routings checked {CALLS} times"
          + ("" if entry["passed"] else ", FAILED"), flush=True)
    return int(not entry["passed"]), {f"lab.grouped_gemm {cfg.label}": entry}


def problems(data: dict | None = None, digest: str | None = None) -> list[str]:
    """What the records lack for the current sources (empty: a record of these sources covers
    every GPU-only kernel that runs on its GPU, each checked twice at every shape)."""
    from lab import compiler

    data = load() if data is None else data
    digest = digest or compiler.code_digest()
    how = "check the kernels on a GPU: python -m lab check --record"
    records = data.get("records", {})
    if not records:
        return [f"no GPU check record; {how}"]
    current = {gpu: r for gpu, r in records.items() if r.get("code_digest") == digest}
    if not current:
        dates = ", ".join(f"{gpu} ({r.get('date', '?')[:10]})" for gpu, r in records.items())
        return [f"the GPU check records ({dates}) are of other kernel sources than these; {how}"]
    out = []
    for gpu, r in current.items():
        cc = tuple(int(x) for x in r["compute_capability"].split("."))
        for name, shapes in gpu_only(cc).items():
            got = r["checked"].get(name)
            if got is None:
                out.append(f"{gpu}: {name} runs there but is not in the record")
            elif not got.get("passed") or got.get("calls", 0) < CALLS:
                out.append(f"{gpu}: {name} not passed {CALLS} calls a shape")
            elif len(got.get("shapes", ())) < shapes:
                out.append(f"{gpu}: {name} checked at {len(got['shapes'])} of {shapes} shapes")
        for name in grouped_names(cc):
            got = r["checked"].get(name)
            if got is None or not got.get("passed") or got.get("calls", 0) < CALLS:
                out.append(f"{gpu}: {name} not passed {CALLS} calls a routing")
    return out


def check_kernel(name: str, calls: int, verbose: bool) -> tuple[str, dict | None, str | None,
                                                               list[str]]:
    """One kernel of ``lab check`` at its shapes, ``calls`` times each through one launcher:
    (name, its record entry or None when skipped, why skipped, the lines to print)."""
    import lab
    from lab import bench, device, kernels

    spec = lab.get_spec(name)
    ok, reason = kernels.runnable(spec)
    if not ok:
        return name, None, reason, [f"{name:<22} skipped: {reason.removeprefix(name + ' ')}"]
    shapes = bench.shapes_for(spec, gpu=device.GPU)
    bad, lines = 0, []
    for m, n, k in shapes:
        for _ in range(calls):              # a second call runs on what the first left behind
            verdict = bench.check(name, m, n, k)
            bad += not verdict.passed
            if not verdict.passed or verbose:
                lines.append(verdict.line())
    lines.append(f"{name:<22} {len(shapes)} shapes checked"
                 + (f" {calls} times" if calls > 1 else "") + (f", {bad} FAILED" if bad else ""))
    return name, {"shapes": [list(s) for s in shapes], "calls": calls, "passed": not bad}, \
        None, lines
