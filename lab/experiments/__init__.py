"""Measurement experiments: ``python -m lab measure NAME`` runs ``lab.experiments.NAME.run``.

Each experiment module has ``run(progress) -> dict`` returning ``rows`` and ``parameters``
(and optionally ``row_fields`` and ``notes``); :mod:`lab.__main__` adds provenance and the
command, then saves through :mod:`lab.results`. ``progress`` wraps an iterable in a tqdm bar.

A module also declares what it needs and what it costs, read by :func:`info`:

* ``CHAPTER`` — the page whose tables it feeds, named as the book names it (``"6.1"``, ``"9b"``:
  :data:`lab.kernels.PAGES`); ``measure all`` runs in page order;
* ``NEEDS`` — tools it cannot do without, names from :data:`TOOLS` (``"cupy"``, ``"ncu"``,
  ``"compute-sanitizer"``, ``"torch-nccl-2gpu"``: two GPUs, PyTorch and NCCL; ``"torch"``,
  ``"sgemm-cuda"``); on a machine that lacks one it is skipped, not failed (``nvcc`` and
  ``ptxas`` come with requirements.txt);
* ``NEEDS_KERNELS`` — registered kernels it cannot do without; where one cannot run
  (:func:`lab.kernels.runnable`: the GPU's compute capability is outside the kernel's range) the
  experiment is skipped with that kernel's one line;
* ``H200_SECONDS`` — an estimate of its wall time on the H200: compiles, checks and timing;
  ``H200_SECONDS_QUICK`` the same for ``run(progress, quick=True)``, when ``run`` takes
  ``quick`` (the tuning sweeps: fewer configurations, the same method).
  ``ALONE = True``: ``measure --jobs N`` runs it after the others, one at a time, because it
  times the host (other experiments compiling beside it would inflate what it measures).
  ``QUICK_IN_MEASURE = False`` keeps ``python -m lab measure --quick`` from passing ``quick``
  to a ``run`` whose quick run writes a file without rows the chapters read (a developer's
  shortcut, called as ``run(progress, quick=True)``): ``--quick`` must leave a book that builds.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass
from types import ModuleType

#: Results files the chapters read that no experiment re-measures: kept as measured once.
#: ``patch_sweep_int32`` is ``patch_sweep`` before the chapter 3 kernels used uint32 indices.
HISTORICAL = ("patch_sweep_int32",)
#: The results file in which ``measure all`` records the run itself (not an experiment).
RUN_RECORD = "measure_all"


def _cupy() -> str | None:
    from lab import baselines

    if baselines.available():
        return None
    return "needs CuPy for cuBLAS and the CUDA C twins (pip install -r requirements-gpu.txt)"


def _ncu() -> str | None:
    from lab.experiments.ncu_dram import ncu_path

    return (None if ncu_path() else
            "needs Nsight Compute (ncu): not on PATH nor in /usr/local/cuda")


def _sanitizer() -> str | None:
    from lab.experiments.sanitizer import sanitizer_path

    return (None if sanitizer_path() else
            "needs compute-sanitizer (CUDA toolkit): not on PATH nor in /usr/local/cuda")


def _torch() -> str | None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "needs PyTorch (cuBLASLt's FP8 GEMM through torch._scaled_mm): torch not found"
    return None


def _two_gpus() -> str | None:
    from lab.multi.launch import missing

    return missing(world=2)


def _sgemm_cuda() -> str | None:
    from lab.experiments.sgemm_cuda import missing

    return missing()


#: Tool name -> a function returning None when the tool is here, else why it is missing.
TOOLS = {"cupy": _cupy, "ncu": _ncu, "compute-sanitizer": _sanitizer,
         "torch-nccl-2gpu": _two_gpus, "sgemm-cuda": _sgemm_cuda, "torch": _torch}


@dataclass(frozen=True)
class Experiment:
    """What :func:`info` reads from an experiment module's metadata lines."""
    name: str
    chapter: str
    needs: tuple[str, ...]
    needs_kernels: tuple[str, ...]
    h200_seconds: float | None
    h200_seconds_quick: float | None
    quick: bool               # whether ``run`` takes ``quick``
    module: ModuleType

    def estimate(self, quick: bool = False) -> float | None:
        """Estimated H200 seconds of ``run`` (with ``quick`` where it takes it)."""
        return self.h200_seconds_quick if quick and self.quick else self.h200_seconds


def names() -> list[str]:
    """Every experiment module, alphabetically (modules starting with ``_`` are helpers)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def get(name: str) -> ModuleType:
    """The experiment module ``name``; ValueError naming the known experiments otherwise."""
    if name not in names():
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


def info(name: str) -> Experiment:
    """The metadata of experiment ``name`` (see the module docstring); ValueError when the
    module declares no ``CHAPTER`` or one that is not a page of the book, a tool that is not
    in :data:`TOOLS` or a kernel that is not registered."""
    from lab.kernels import REGISTRY, page_order

    module = get(name)
    if not hasattr(module, "CHAPTER"):
        raise ValueError(f"experiment {name!r} declares no CHAPTER (the page it feeds)")
    try:
        page_order(module.CHAPTER)
    except ValueError as exc:
        raise ValueError(f"experiment {name!r}: {exc}") from None
    needs = tuple(getattr(module, "NEEDS", ()))
    unknown = [t for t in needs if t not in TOOLS]
    if unknown:
        raise ValueError(f"experiment {name!r} needs unknown tool(s) {unknown}; "
                         f"known: {', '.join(TOOLS)}")
    kernels = tuple(getattr(module, "NEEDS_KERNELS", ()))
    unknown = [k for k in kernels if k not in REGISTRY]
    if unknown:
        raise ValueError(f"experiment {name!r} needs unregistered kernel(s) {unknown}")
    seconds = getattr(module, "H200_SECONDS", None)
    return Experiment(name, module.CHAPTER, needs, kernels, seconds,
                      getattr(module, "H200_SECONDS_QUICK", seconds),
                      "quick" in inspect.signature(module.run).parameters
                      and getattr(module, "QUICK_IN_MEASURE", True), module)


def book_order() -> list[str]:
    """Every experiment, in the order ``measure all`` runs them: by page, then by name."""
    from lab.kernels import page_order

    return sorted(names(), key=lambda n: (page_order(info(n).chapter), n))


def skip_reason(name: str) -> str | None:
    """Why experiment ``name`` cannot run on this device (a kernel it needs cannot, a tool is
    missing), or None when it can."""
    from lab import kernels

    exp = info(name)
    for kernel in exp.needs_kernels:
        ok, line = kernels.runnable(kernel)
        if not ok:
            return line
    for tool in exp.needs:
        reason = TOOLS[tool]()
        if reason:
            return reason
    return None


def in_processes(name: str, processes: int, progress) -> list[dict]:
    """Experiment ``name``'s rows measured in ``processes`` fresh processes, one after another
    (``python -m lab.experiments.<name> --child PATH INDEX``): every process's rows, read from
    the JSON-lines file it appends to as it measures. A process that fails raises RuntimeError
    with the end of its stderr.

    With ``LAB_SUITE_WORK`` set, the files are kept in its folder ``<name>/``, and a run cut
    short (a time limit) goes on where it stopped: a process that finished left a marker naming
    its GPU (``process<i>.done``), and a later run on the same GPU keeps that process's rows and
    runs only the rest; a process cut short, or one that ran on another GPU, is run again."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    from lab import device

    kept = os.environ.get("LAB_SUITE_WORK")
    if kept:
        work = os.path.join(kept, name)
        os.makedirs(work, exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix=f"{name}_")
    gpu = device.provenance()["gpu"]
    raw = []
    for index in progress(range(processes), desc="processes"):
        path = os.path.join(work, f"process{index}.jsonl")
        done = os.path.join(work, f"process{index}.done")
        if not (kept and _finished_on(done, gpu)):
            for stale in (path, done):
                if os.path.exists(stale):
                    os.remove(stale)
            ran = subprocess.run([sys.executable, "-m", f"lab.experiments.{name}", "--child",
                                  path, str(index)], capture_output=True, text=True)
            if ran.returncode:
                raise RuntimeError(f"{name} process {index} failed: {ran.stderr[-800:]}")
            with open(done, "w") as f:
                json.dump({"gpu": gpu}, f)
        with open(path) as f:
            raw += [json.loads(line) for line in f]
    return raw


def _finished_on(marker: str, gpu: str) -> bool:
    """Whether ``marker`` says its process finished on ``gpu``."""
    import json

    try:
        with open(marker) as f:
            return json.load(f).get("gpu") == gpu
    except (OSError, ValueError, AttributeError):
        return False
