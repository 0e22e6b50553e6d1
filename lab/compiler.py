"""Compiler facts without a GPU: PTX for sm_90, then ``ptxas -v`` and ``nvdisasm``.

For any registered kernel, :func:`report` gives registers per thread, spill stores/loads, stack
frame, static shared memory, the SASS, and an instruction-mix summary of the whole kernel and of
its hottest loop (the backward branch whose body holds the most FFMA/HMMA). ``ptxas`` and
``nvdisasm`` come from the ``nvidia-cuda-nvcc`` / ``nvidia-cuda-nvdisasm`` wheels.

Under the simulator the real ``numba.cuda`` is not loaded, so the work is done in a subprocess
started with ``LAB_DEVICE=compile`` (real numba-cuda, no launches); results come back as JSON.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import device

ARCH = (9, 0)


@dataclass
class CompileReport:
    kernel: str          # registry name
    function: str        # Python name of the @cuda.jit function
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    instructions: int
    mix: dict = field(default_factory=dict)        # opcode -> count, whole kernel
    loop_mix: dict = field(default_factory=dict)   # opcode -> count, hottest loop
    sass: str = field(default="", repr=False)
    ptx: str = field(default="", repr=False)

    def summary(self) -> dict:
        loop = self.loop_mix
        loop_total = sum(loop.values()) or 1
        fma = loop.get("FFMA", 0)
        lds = {op: n for op, n in loop.items() if op.startswith("LDS")}
        return {"kernel": self.kernel, "registers": self.registers,
                "spill_stores": self.spill_stores, "spill_loads": self.spill_loads,
                "stack_bytes": self.stack_bytes, "shared_bytes": self.shared_bytes,
                "loop_instructions": sum(loop.values()),
                "loop_ffma_share": round(fma / loop_total, 3),
                "loop_lds": ", ".join(f"{op}×{n}" for op, n in sorted(lds.items())) or "-",
                "loop_hmma": loop.get("HMMA", 0)}


def tool(name: str) -> str:
    """Path of ``ptxas``/``nvdisasm`` from the pinned pip wheels (requirements.txt).

    Only the wheels are used, never a CUDA toolkit on PATH: register counts and instruction mixes
    change between ptxas versions, and the book's checked compiler facts must be the same on
    every machine.
    """
    try:
        import nvidia
        for base in nvidia.__path__:
            for sub in ("cu13/bin", "cuda_nvcc/bin", "cuda_nvdisasm/bin", "bin"):
                cand = Path(base) / sub / name
                if cand.exists():
                    return str(cand)
    except ImportError:
        pass
    raise FileNotFoundError(f"{name} from the pinned nvidia-cuda-nvcc / nvidia-cuda-nvdisasm "
                            "wheels was not found: pip install -r requirements.txt")


_PTXAS_RE = {
    "registers": re.compile(r"Used (\d+) registers"),
    "stack_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
}


def parse_ptxas(text: str) -> dict:
    out = {}
    for key, rx in _PTXAS_RE.items():
        m = rx.search(text)
        out[key] = int(m.group(1)) if m else 0
    return out


_SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")


def parse_sass(sass: str) -> tuple[list[tuple[int, str, str]], dict[str, int]]:
    """(address, opcode, text) per instruction, and label -> address."""
    instrs, labels, pending = [], {}, []
    for line in sass.splitlines():
        lab = _LABEL.match(line)
        if lab:
            pending.append(lab.group(1))
            continue
        m = _SASS_LINE.search(line)
        if not m:
            continue
        addr, text = int(m.group(1), 16), m.group(2).strip()
        for name in pending:
            labels[name] = addr
        pending = []
        body = re.sub(r"^@!?U?P\w+\s+", "", text)
        opcode = body.split()[0] if body else ""
        instrs.append((addr, opcode, text))
    return instrs, labels


def opcode_class(opcode: str) -> str:
    """FFMA, LDS.128, LDG.E.128, HMMA, …: base name plus the access width for memory ops."""
    parts = opcode.split(".")
    base = parts[0]
    if base in ("LDS", "STS", "LDG", "STG", "LDL", "STL", "LDSM", "LDGSTS", "LD", "ST"):
        width = next((p for p in parts[1:] if p in ("64", "128", "U8", "S8", "U16", "S16")), "")
        return f"{base}.{width}" if width else base
    return base


def mix_of(instrs) -> dict[str, int]:
    c = Counter(opcode_class(op) for _, op, _ in instrs if op and op != "NOP")
    return dict(sorted(c.items(), key=lambda kv: -kv[1]))


def hottest_loop(instrs, labels) -> list:
    """Instructions of the backward-branch region with the most FFMA + HMMA."""
    best, best_score = [], -1
    for i, (addr, op, text) in enumerate(instrs):
        if not op.startswith("BRA"):
            continue
        m = re.search(r"\((\.L_x_\d+)\)", text)
        if not m or m.group(1) not in labels or labels[m.group(1)] > addr:
            continue
        start = labels[m.group(1)]
        body = [x for x in instrs if start <= x[0] <= addr]
        score = sum(1 for _, o, _ in body if o.startswith(("FFMA", "HMMA")))
        if score > best_score:
            best, best_score = body, score
    return best


def compile_function(py_func, signature: str, kernel: str = "?") -> CompileReport:
    """PTX → cubin → SASS for one kernel function (needs real numba-cuda, no GPU)."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(py_func, signature, cc=ARCH, lineinfo=False)
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        ptx_path.write_text(ptx)
        run = subprocess.run([tool("ptxas"), f"-arch=sm_{ARCH[0]}{ARCH[1]}", "-v",
                              str(ptx_path), "-o", str(cubin)],
                             capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"ptxas failed for {kernel}: {run.stderr.strip()}")
        facts = parse_ptxas(run.stderr + run.stdout)
        sass = subprocess.run([tool("nvdisasm"), "-c", str(cubin)], capture_output=True,
                              text=True, check=True).stdout
    instrs, labels = parse_sass(sass)
    return CompileReport(kernel=kernel, function=py_func.__name__, **facts,
                         instructions=len(instrs), mix=mix_of(instrs),
                         loop_mix=mix_of(hottest_loop(instrs, labels)), sass=sass, ptx=ptx)


def _report_in_process(name: str) -> list[CompileReport]:
    """``name`` is a registered kernel or ``module:function`` (signature from the module's
    ``SIGNATURES`` dict), e.g. ``lab.roofline:fma_kernel``."""
    if ":" in name:
        import importlib

        module_name, func = name.split(":")
        module = importlib.import_module(module_name)
        return [compile_function(getattr(module, func).py_func, module.SIGNATURES[func],
                                 kernel=name)]
    from lab.kernels import get_spec

    spec = get_spec(name)
    if not spec.compile:
        raise ValueError(f"kernel {name!r} declares nothing to compile")
    return [compile_function(getattr(d, "py_func", d), sig, kernel=name)
            for d, sig in spec.compile]


@functools.lru_cache(maxsize=None)
def _report_cached(name: str) -> tuple[CompileReport, ...]:
    if device.MODE in ("gpu", "compile"):
        return tuple(_report_in_process(name))
    env = dict(os.environ, LAB_DEVICE="compile")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    run = subprocess.run([sys.executable, "-m", "lab.compiler", name], capture_output=True,
                         text=True, env=env)
    if run.returncode:
        raise RuntimeError(f"offline compile of {name!r} failed:\n{run.stderr.strip()}")
    return tuple(CompileReport(**d) for d in json.loads(run.stdout))


def report(name: str) -> list[CompileReport]:
    """Compiler facts for every function of the registered kernel ``name`` (sm_90), or for
    one ``module:function`` that is not a registered matmul (e.g. the roofline kernels)."""
    return list(_report_cached(name))


def table(names) -> list[dict]:
    """One summary row per registered kernel (its main — first — function)."""
    return [report(n)[0].summary() for n in names]


if __name__ == "__main__":  # worker for the simulator case: python -m lab.compiler NAME
    reports = _report_in_process(sys.argv[1])
    print(json.dumps([asdict(r) for r in reports]))
