"""Where the kernels run: a real GPU or Numba's CUDA simulator, decided before numba is imported.

``import lab`` imports this module first. It looks for a CUDA driver with at least one device
(through ``libcuda`` with ctypes, so numba is not touched) and, if there is none, sets
``NUMBA_ENABLE_CUDASIM=1`` so that every ``@cuda.jit`` kernel in ``lab`` runs in the simulator.

Overrides, in order of precedence:

* ``NUMBA_ENABLE_CUDASIM`` already set in the environment: respected as it is.
* ``LAB_DEVICE=simulator``: force the simulator even on a GPU machine.
* ``LAB_DEVICE=compile``: real numba-cuda without a GPU, for offline PTX/SASS (``lab.compiler``).
* Any other ``LAB_DEVICE`` value is refused (ValueError) rather than ignored.

The module also builds the provenance record that every results file carries.
"""
from __future__ import annotations

import ctypes
import datetime as _dt
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata


def _driver_device_count() -> int:
    """Number of CUDA devices the driver reports, 0 when there is no driver or no device."""
    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return 0
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return 0
            return count.value
        except AttributeError:
            return 0
    return 0


#: The values ``LAB_DEVICE`` may take (unset or empty: a GPU if the driver reports one).
DEVICE_CHOICES = ("simulator", "compile")


def requested() -> str:
    """``LAB_DEVICE`` (lower case, "" when unset); ValueError naming the value and the choices
    for anything else, so that a misspelling never silently picks the GPU."""
    forced = os.environ.get("LAB_DEVICE", "").strip().lower()
    if forced and forced not in DEVICE_CHOICES:
        import difflib

        close = difflib.get_close_matches(forced, DEVICE_CHOICES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"LAB_DEVICE={os.environ['LAB_DEVICE']!r} is not a device mode{hint}: "
                         f"use {' or '.join(map(repr, DEVICE_CHOICES))}, or leave it unset "
                         "to use a GPU when there is one")
    return forced


def _decide() -> str:
    forced = requested()
    if "numba.cuda" in sys.modules and "NUMBA_ENABLE_CUDASIM" not in os.environ:
        # numba.cuda was imported before lab: we can no longer switch; report what it chose.
        return "gpu" if _driver_device_count() > 0 else "simulator"
    if forced == "compile":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
        return "compile"
    if forced == "simulator":
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        return "simulator"
    if "NUMBA_ENABLE_CUDASIM" in os.environ:
        return "simulator" if os.environ["NUMBA_ENABLE_CUDASIM"] not in ("", "0") else "gpu"
    if _driver_device_count() > 0:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
        return "gpu"
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    return "simulator"


#: "gpu", "simulator" or "compile" (offline compilation only, no launches).
MODE: str = _decide()
# Small checks launch fewer blocks than the GPU has SMs on purpose; Numba's low-occupancy
# warning would only repeat that on stderr (where a notebook test counts it as a failure).
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
SIMULATOR: bool = MODE == "simulator"
GPU: bool = MODE == "gpu"
if not SIMULATOR:       # wherever Numba compiles: copy inlined functions once (lab.inlining)
    from lab import inlining

    inlining.install()
else:                   # the simulator's bookkeeping quickened (lab.simulator)
    from lab import simulator

    simulator.install()


def describe() -> str:
    """One line for a notebook's first cell: where this session's kernels run."""
    if GPU:
        p = provenance()
        return f"Running on {p['gpu']} (CC {p['compute_capability']}, {p['sm_count']} SMs)."
    if SIMULATOR:
        return ("No GPU here: kernels run in Numba's CUDA simulator at small sizes; "
                "tables and figures come from the committed H200 results.")
    return "Compile-only mode: kernels are compiled to PTX/SASS but not launched."


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _nvidia_smi(query: str) -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def provenance() -> dict:
    """Everything a results file needs to say where and with what it was measured."""
    rec: dict = {
        "device_mode": MODE,
        "gpu": None, "compute_capability": None, "sm_count": None, "l2_bytes": None,
        "driver": None, "cuda_runtime": None,
        "python": platform.python_version(),
        "numba": _version("numba"), "numba_cuda": _version("numba-cuda"),
        "numpy": _version("numpy"), "cupy": _version("cupy-cuda13x") or _version("cupy"),
        "sm_clock_mhz": None, "mem_clock_mhz": None, "max_sm_clock_mhz": None,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
    }
    if not GPU:
        rec["gpu"] = "CUDA simulator" if SIMULATOR else "none (compile only)"
        return rec
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name
    rec["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
    rec["compute_capability"] = "%d.%d" % dev.compute_capability
    rec["sm_count"] = int(dev.MULTIPROCESSOR_COUNT)
    rec["l2_bytes"] = int(dev.L2_CACHE_SIZE)
    try:
        rec["driver"] = cuda.cudadrv.driver.driver.get_version()
        rec["driver"] = "%d.%d" % rec["driver"]
    except Exception:  # noqa: BLE001 - provenance is best effort
        pass
    rec["driver"] = _nvidia_smi("driver_version") or rec["driver"]
    try:
        rec["cuda_runtime"] = "%d.%d" % cuda.runtime.get_version()
    except Exception:  # noqa: BLE001
        pass
    rec["sm_clock_mhz"] = _nvidia_smi("clocks.sm")
    rec["mem_clock_mhz"] = _nvidia_smi("clocks.mem")
    rec["max_sm_clock_mhz"] = _nvidia_smi("clocks.max.sm")
    return rec


def gpu_slug(name: str | None = None) -> str:
    """Folder name for a GPU's results: 'NVIDIA H200' -> 'h200'."""
    if name is None:
        name = provenance()["gpu"]
    slug = str(name).lower().replace("nvidia", "").strip()
    slug = "".join(c if c.isalnum() else "-" for c in slug).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    return slug or "unknown"
