"""Compiler facts without a GPU: PTX for sm_90, then ``ptxas -v`` and ``nvdisasm``.

For any registered kernel, :func:`report` gives registers per thread, spill stores/loads, stack
frame, static shared memory, the SASS, and an instruction-mix summary of the whole kernel and of
its hottest loop (the backward branch whose body holds the most FFMA/HMMA/HGMMA; ``loop_hmma``
counts both tensor-core kinds, ``mma.sync``'s HMMA and Hopper's ``wgmma`` HGMMA). ``ptxas`` and
``nvdisasm`` come from the ``nvidia-cuda-nvcc`` / ``nvidia-cuda-nvdisasm`` wheels.

Under the simulator the real ``numba.cuda`` is not loaded, so the work is done in a subprocess
started with ``LAB_DEVICE=compile`` (real numba-cuda, no launches); results come back as JSON.

:func:`ptx` gives a kernel's PTX for the oldest capability it claims and :func:`assemble` runs
``ptxas`` on PTX for one architecture; :func:`capability` gives what ptxas says of that PTX for
every architecture the kernel claims and for the one below, so tests can prove each ``min_cc``.

Reports and PTX are kept on disk between runs, in ``LAB_CACHE_DIR`` (default
``$XDG_CACHE_HOME/gemm-lab``, else ``~/.cache/gemm-lab``; ``LAB_CACHE_DIR=off`` turns it off),
keyed by a hash of every ``lab`` source file that can change generated code and the versions of
numba, numba-cuda, llvmlite and the NVVM/ptxas/nvdisasm wheels: an edit or an upgrade misses.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import device
from lab.lru import LRU

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
    warnings: list = field(default_factory=list, repr=False)   # ptxas's warnings and notes

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
                "loop_hmma": loop.get("HMMA", 0) + loop.get("HGMMA", 0)}


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
        score = sum(1 for _, o, _ in body if o.startswith(("FFMA", "HMMA", "HGMMA")))
        if score > best_score:
            best, best_score = body, score
    return best


def compile_function(py_func, signature: str, kernel: str = "?", cc: tuple = ARCH,
                     launch_bounds=None) -> CompileReport:
    """PTX → cubin → SASS for one kernel function (needs real numba-cuda, no GPU), for ``cc``
    (``(9, 0, "a")`` builds ``sm_90a``, which wgmma and setmaxnreg need). ``warnings`` keeps
    ptxas's warnings and performance notes (e.g. C7508, a ``setmaxnreg`` it ignored); PTX that
    does not assemble raises RuntimeError with ptxas's message."""
    from numba import cuda

    ptx, _ = cuda.compile_ptx(py_func, signature, cc=cc, lineinfo=False,
                              launch_bounds=launch_bounds)
    with tempfile.TemporaryDirectory() as tmp:
        ptx_path, cubin = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        ptx_path.write_text(ptx)
        run = subprocess.run([tool("ptxas"), "-arch=sm_" + "".join(map(str, cc)), "-v",
                              str(ptx_path), "-o", str(cubin)],
                             capture_output=True, text=True)
        if run.returncode:
            raise RuntimeError(f"ptxas failed for {kernel}: {run.stderr.strip()}")
        facts = parse_ptxas(run.stderr + run.stdout)
        sass = subprocess.run([tool("nvdisasm"), "-c", str(cubin)], capture_output=True,
                              text=True, check=True).stdout
    instrs, labels = parse_sass(sass)
    warnings = [ln for ln in (run.stderr + run.stdout).splitlines()
                if "warning" in ln.lower() or "performance" in ln.lower()]
    return CompileReport(kernel=kernel, function=py_func.__name__, **facts,
                         instructions=len(instrs), mix=mix_of(instrs),
                         loop_mix=mix_of(hottest_loop(instrs, labels)), sass=sass, ptx=ptx,
                         warnings=warnings)


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
    return [compile_function(getattr(d, "py_func", d), sig, kernel=name, cc=spec.target(ARCH),
                             launch_bounds=getattr(d, "targetoptions", {}).get("launch_bounds"))
            for d, sig in spec.compile]


# ----------------------------------------------------------------------------- disk cache

#: Parts of ``lab`` that generate no kernel code (left out of the cache key).
_NOT_CODEGEN = {"chapters", "experiments", "results", "twins", "__main__.py", "page.py",
                "plots.py", "tables.py", "notebooks.py", "results.py", "seeds.py",
                "baselines.py", "listing.py", "lru.py", "workers.py", "simulator.py"}
_TOOL_DISTS = ("numba", "numba-cuda", "llvmlite", "nvidia-nvvm", "nvidia-cuda-nvcc",
               "nvidia-cuda-nvdisasm")


def cache_dir() -> Path | None:
    """Where compiler results are kept between runs (None: ``LAB_CACHE_DIR=off``)."""
    configured = os.environ.get("LAB_CACHE_DIR", "")
    if configured.lower() in ("off", "0", "none"):
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gemm-lab"


@functools.lru_cache(maxsize=None)
def _code_digest() -> str:
    """Hash of the kernel-generating sources of ``lab`` and the toolchain's versions."""
    from importlib import metadata

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in _NOT_CODEGEN:
            continue
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in _TOOL_DISTS:
        try:
            h.update(f"{dist}={metadata.version(dist)};".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    return h.hexdigest()


def _cache_file(kind: str, name: str) -> Path | None:
    where = cache_dir()
    if where is None:
        return None
    key = hashlib.sha256(f"{_code_digest()}|{kind}|{name}".encode()).hexdigest()[:32]
    return where / "compiler" / f"{kind}-{key}.json"


def _cache_get(kind: str, name: str):
    path = _cache_file(kind, name)
    if path is None or not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None                     # a torn or foreign file: compile again


def _cache_put(kind: str, name: str, value) -> None:
    path = _cache_file(kind, name)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value))
        tmp.replace(path)               # atomic: parallel test workers never see half a file
    except OSError:
        pass                            # a read-only home: no cache, same results


def recall(kind: str, name: str):
    """A value kept on disk by :func:`remember` under ``kind`` and ``name`` for these sources
    and this toolchain (None when there is none, or no cache)."""
    return _cache_get(kind, name)


def remember(kind: str, name: str, value) -> None:
    """Keep a JSON value on disk under ``kind`` and ``name``, for these sources and this
    toolchain (``lab.gemm``'s tuning: the fastest candidate at a shape on a GPU)."""
    _cache_put(kind, name, value)


# ----------------------------------------------------------------------------- committed facts
#
# The facts the book shows are produced once with the pinned toolchain and committed in
# ``lab/facts/compiler.json``, keyed by a hash of the sources that generate code: every machine
# then prints the same registers and instruction counts, whatever CUDA toolkit it has (a GPU
# machine's own NVVM or ptxas may differ from the pinned wheels). When the sources change the
# file is stale and facts are compiled live; ``tests/test_facts.py`` fails until the file is
# recorded again:  LAB_FACTS=record python -m lab compile  (every registered kernel, every
# CUDA C twin and the teaching kernels of :data:`lab.kernels.TEACHING`).

FACTS_FILE = Path(__file__).resolve().parent / "facts" / "compiler.json"

#: What the test suite concludes from compiling offline, kept apart from the facts the book
#: prints: each kernel's capability verdicts (:func:`capability`) and the answers of the test
#: files' compile workers (``tests/conftest.py``), each under its own key. Recorded by the same
#: command, from the same sources; ``tests/test_facts.py`` fails while it is stale.
CHECKS_FILE = FACTS_FILE.with_name("checks.json")
_CHECK_KINDS = ("capability", "worker")


def facts_file(kind: str) -> Path:
    """The committed file that keeps facts of ``kind``."""
    return CHECKS_FILE if kind in _CHECK_KINDS else FACTS_FILE


def _codegen_files() -> list[tuple[Path, Path]]:
    """``(path relative to lab/, path)`` of every ``lab`` source that generates device code."""
    root = Path(__file__).resolve().parent
    files = sorted(list(root.rglob("*.py")) + list((root / "twins").glob("*.cu")))
    pairs = [(path.relative_to(root), path) for path in files]
    return [(rel, path) for rel, path in pairs
            if not (rel.suffix == ".py" and rel.parts[0] in _NOT_CODEGEN | _HOST_ONLY)]


@functools.lru_cache(maxsize=None)
def source_digest() -> str:
    """Hash of every ``lab`` source that generates device code (kernels, intrinsics, twins),
    byte for byte."""
    h = hashlib.sha256()
    for rel, path in _codegen_files():
        h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def code_digest() -> str:
    """Hash of the sources of :func:`source_digest` read as code: each Python file as
    :func:`canonical_code` writes it (no docstrings, comments, blank lines or layout), the CUDA C
    twins byte for byte. A GPU check record is tied to it (:mod:`lab.gpu_checks`): a docstring
    or a comment edited in a kernel module changes no kernel and keeps the record, while any
    change of code, a string or a number included, asks for a new one."""
    h = hashlib.sha256()
    for rel, path in _codegen_files():
        text = (canonical_code(path.read_text()).encode() if path.suffix == ".py"
                else path.read_bytes())
        h.update(str(rel).encode() + b"\0" + text + b"\0")
    return h.hexdigest()


def canonical_code(source: str) -> str:
    """``source``'s syntax tree as one line of text without docstrings or positions: each node
    as its class name and its non-empty fields. Python 3.11, 3.12 and 3.13 write the same text
    for the same code (3.12's empty ``type_params`` and 3.13's ``None`` defaults are left out)."""
    import ast

    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)

    def dump(node) -> str:
        if isinstance(node, ast.AST):
            fields = []
            for name in node._fields:
                value = getattr(node, name, None)
                if (name == "body" and isinstance(node, documented)
                        and ast.get_docstring(node, clean=False) is not None):
                    value = value[1:]
                if value is None or value == [] or name in ("kind", "type_comment"):
                    continue
                fields.append(f"{name}={dump(value)}")
            return f"{type(node).__name__}({','.join(fields)})"
        if isinstance(node, list):
            return "[" + ",".join(dump(x) for x in node) + "]"
        return repr(node)

    return dump(ast.parse(source))


#: Host-side modules that never change generated code (left out of :func:`source_digest`).
_HOST_ONLY = {"compiler.py", "api.py", "bench.py", "accuracy.py", "timing.py", "counting.py",
              "model.py", "fragments.py", "device.py", "gpulock.py", "facts", "providers.py",
              "libraries.py", "triton_gemm.py", "clocks.py", "multi", "dispatch.py", "gemm.py",
              "results.py", "schema.py", "predict.py",
              "operands.py", "gpu_checks.py", "grouped.py", "scaled.py", "simulator.py"}


def toolchain() -> dict:
    """Versions of the compilers behind the facts (numba, NVVM, ptxas, nvdisasm wheels)."""
    from importlib import metadata

    out = {}
    for dist in _TOOL_DISTS:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def pinned_toolchain() -> dict:
    """The versions requirements.txt pins for the compilers behind the facts (``None`` where it
    pins none): what the committed facts must have been recorded with."""
    pins = dict.fromkeys(_TOOL_DISTS)
    path = Path(__file__).resolve().parent.parent / "requirements.txt"
    for line in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9_.-]+)(?:\[[^]]*\])?\s*==\s*([^\s;#]+)", line)
        if m and m.group(1).lower() in pins:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def recording() -> bool:
    """Whether this run records the committed facts again (``LAB_FACTS=record``)."""
    return os.environ.get("LAB_FACTS", "").lower() == "record"


def committed_facts(path: Path | None = None) -> dict:
    """A committed facts file as stored (``FACTS_FILE`` unless named; empty when absent)."""
    return _read_facts(path or FACTS_FILE)


@functools.lru_cache(maxsize=None)
def _read_facts(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def facts_toolchain() -> dict:
    """The toolchain behind the facts the book prints: the committed file's when it is current,
    else this machine's (facts are then compiled live)."""
    facts = committed_facts()
    if not recording() and facts.get("source_digest") == source_digest():
        return dict(facts["toolchain"])
    return toolchain()


def stored(kind: str, name: str):
    """A committed fact (``kind`` "report", "twin", "ptxas", "capability" or "worker") for
    ``name``, or None when its file (:func:`facts_file`) lacks it, is stale (sources changed
    since it was recorded) or is being recorded again."""
    facts = committed_facts(facts_file(kind))
    if recording() or facts.get("source_digest") != source_digest():
        return None
    return facts.get("entries", {}).get(f"{kind}:{name}")


_KEEP_SASS = re.compile(r"^\s*(?:/\*[0-9a-f]{4,}\*/|\.L_x_\d+:|\.target\b)")


def compact_sass(sass: str) -> str:
    """The SASS lines the facts are read from: the target, branch labels and instructions with
    their addresses (no section directives or mangled symbol names), whitespace collapsed."""
    return "\n".join(" ".join(ln.split()) for ln in sass.splitlines() if _KEEP_SASS.match(ln))


def _pack(value):
    """A fact as stored: no PTX text (not a fact the book shows), the SASS compacted."""
    def one(d):
        if not isinstance(d, dict) or "sass" not in d:
            return d
        return dict(d, ptx="", sass=compact_sass(d["sass"]))
    return [one(d) for d in value] if isinstance(value, list) else one(value)


def record(kind: str, name: str, value) -> None:
    """With ``LAB_FACTS=record``: add a freshly compiled fact to the committed file (safe from
    several threads and processes at once: a lock file, and an atomic replace)."""
    if not recording() or kind == "ptx":   # PTX stays live: its verdicts are the facts kept
        return
    import fcntl

    value = _pack(value)
    path = facts_file(kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _RECORD_LOCK, open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            facts = json.loads(path.read_text())
        except FileNotFoundError:
            facts = {}
        if (facts.get("source_digest") != source_digest()
                or facts.get("toolchain") != toolchain()):
            facts = {"source_digest": source_digest(), "toolchain": toolchain(), "entries": {}}
        facts["entries"][f"{kind}:{name}"] = value
        facts["entries"] = dict(sorted(facts["entries"].items()))
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(facts, indent=0) + "\n")
        tmp.replace(path)
        _read_facts.cache_clear()


_RECORD_LOCK = threading.Lock()


# ----------------------------------------------------------------------------- PTX per capability

def _ptx_in_process(name: str) -> dict:
    """PTX of every function of registered kernel ``name`` for its oldest claimed capability."""
    from numba import cuda

    from lab.kernels import get_spec

    spec = get_spec(name)
    target = spec.target(spec.min_cc)
    texts = []
    for d, sig in spec.compile:
        text, _ = cuda.compile_ptx(getattr(d, "py_func", d), sig, cc=target, lineinfo=False,
                                   launch_bounds=getattr(d, "targetoptions", {})
                                   .get("launch_bounds"))
        texts.append(text)
    return {"target": "sm_" + "".join(map(str, target)), "ptx": texts}


_IN_PROCESS = {"report": lambda n: [asdict(r) for r in _report_in_process(n)],
               "ptx": _ptx_in_process,
               "capability": lambda n: _capability_in_process(n)}


def _compute(kind: str, names: list[str], jobs: int = 1) -> dict:
    """``{name: result}`` for ``kind`` ("report", "ptx" or "capability"), in this process when
    numba-cuda is real, else in up to ``jobs`` worker processes started with
    ``LAB_DEVICE=compile``."""
    if device.MODE in ("gpu", "compile"):
        return {n: _IN_PROCESS[kind](n) for n in names}
    env = dict(os.environ, LAB_DEVICE="compile")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    chunks = [names[i::jobs] for i in range(max(1, min(jobs, len(names))))]
    procs = [subprocess.Popen([sys.executable, "-m", "lab.compiler", kind, *chunk], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for chunk in chunks]
    out, errors = {}, []
    for proc, chunk in zip(procs, chunks):
        stdout, stderr = proc.communicate()
        if proc.returncode:
            errors.append(f"offline compile of {', '.join(chunk)} failed:\n{stderr.strip()}")
        else:
            out.update(json.loads(stdout))
    if errors:
        raise RuntimeError("\n".join(errors))
    return out


def prefetch(names, kind: str = "report", jobs: int = 2) -> None:
    """Compile (``kind`` "report": SASS facts for sm_90; "ptx": PTX at the oldest claimed
    capability; "capability": ptxas's verdicts on that PTX) every name of ``names`` not yet
    committed or cached, ``jobs`` processes at a time."""
    if kind not in _IN_PROCESS:
        raise ValueError(f"kind must be one of {sorted(_IN_PROCESS)}, got {kind!r}")
    names = list(dict.fromkeys(names))
    missing = []
    for n in names:
        if (kind, n) in _MEMO or stored(kind, n) is not None:
            continue
        cached = _cache_get(kind, n)      # keyed by sources and toolchain: safe to record
        if cached is None:
            missing.append(n)
        else:
            record(kind, n, cached)
    if missing:
        for name, value in _compute(kind, missing, jobs).items():
            _cache_put(kind, name, value)
            record(kind, name, value)
            _MEMO[(kind, name)] = value


#: Facts of this process, by (kind, name). Filled without holding the cache's lock (not
#: :meth:`LRU.get_or_make`): threads compile different kernels side by side.
_MEMO = LRU(4096)


def _get(kind: str, name: str):
    value = _MEMO.get((kind, name))
    if value is None:
        value = stored(kind, name)
        if value is None:
            value = _cache_get(kind, name)
            if value is None:
                value = _compute(kind, [name])[name]
                _cache_put(kind, name, value)
            record(kind, name, value)
        _MEMO[(kind, name)] = value
    return value


def ptx(name: str) -> tuple[str, list[str]]:
    """``(target, [PTX of each function])`` of registered kernel ``name``, compiled for the
    oldest compute capability it claims (``min_cc``; ``sm_90a`` for one-architecture code)."""
    value = _get("ptx", name)
    return value["target"], list(value["ptx"])


def assemble(ptx_text: str, arch: str) -> tuple[bool, str]:
    """Run ``ptxas -arch=<arch>`` on ``ptx_text``: (accepted, ptxas's messages). The verdict is
    cached by the text's hash (same PTX, same ptxas: same answer)."""
    name = f"{hashlib.sha256(ptx_text.encode()).hexdigest()}-{arch}"
    verdict = stored("ptxas", name) or _verdict(ptx_text, arch)
    record("ptxas", name, verdict)
    return bool(verdict[0]), verdict[1]


def _verdict(ptx_text: str, arch: str) -> list:
    """``[accepted, messages]`` of ``ptxas -arch=<arch>`` on ``ptx_text``, from the disk cache
    when it is there (nothing is recorded: see :func:`assemble`)."""
    name = f"{hashlib.sha256(ptx_text.encode()).hexdigest()}-{arch}"
    cached = _cache_get("ptxas", name)
    if cached is None:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "k.ptx"
            src.write_text(ptx_text)
            run = subprocess.run([tool("ptxas"), f"-arch={arch}", str(src), "-o",
                                  str(Path(tmp) / "k.cubin")], capture_output=True, text=True)
        # the temporary path in ptxas's messages would make equal runs differ
        cached = [run.returncode == 0,
                  (run.stderr + run.stdout).replace(str(src), "k.ptx").strip()]
        _cache_put("ptxas", name, cached)
    return cached


# ----------------------------------------------------------------------------- capability facts
#
# What tests/kernels/test_capabilities.py concludes from ptxas, per registered kernel: the PTX
# for the oldest capability it claims, assembled for each architecture it claims, and the same
# PTX refused one architecture below (the toolkit's floor, sm_70, for the plain FP32 kernels).
# The PTX itself is not kept (megabytes); the verdicts are, in CHECKS_FILE.

#: The architectures the capability facts cover (ptxas of CUDA 13 assembles none below sm_75).
CAPABILITY_ARCHS = ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0))
#: Below the oldest of those, the toolkit itself stops.
TOOLKIT_FLOOR = "sm_70"
_LOG_TAIL = 1500


def sm(cc: tuple) -> str:
    """``(9, 0, "a")`` -> ``"sm_90a"``."""
    return "sm_" + "".join(map(str, cc))


def claims(spec) -> list[tuple[int, int]]:
    """The architectures of :data:`CAPABILITY_ARCHS` that kernel ``spec`` claims to run on."""
    return [cc for cc in CAPABILITY_ARCHS
            if cc >= spec.min_cc and (spec.max_cc is None or cc <= spec.max_cc)]


def capability(name: str) -> dict:
    """What ptxas says of registered kernel ``name``'s PTX (see :func:`_capability_facts`):
    committed when current, else from the disk cache, else computed now."""
    return _get("capability", name)


def _capability_in_process(name: str) -> dict:
    from lab.kernels import get_spec

    target, texts = ptx(name)
    return _capability_facts(get_spec(name), target, texts)


def _capability_facts(spec, target: str, texts: list[str]) -> dict:
    """``target`` (the PTX's), ``functions``, ``declared`` (every text says ``.target
    <target>``), ``assembles`` (per claimed architecture: ``[accepted, log tail]``) and
    ``below`` (the architecture under the claim and ptxas's refusal there)."""
    assembles = {}
    for cc in claims(spec):
        arch = sm(spec.target(cc))
        verdicts = [_verdict(text, arch) for text in texts]
        failed = [log for ok, log in verdicts if not ok]
        assembles[arch] = [not failed, failed[0][-_LOG_TAIL:] if failed else ""]
    return {"target": target, "functions": len(texts),
            "declared": bool(texts) and all(f".target {target}" in t for t in texts),
            "assembles": assembles, "below": _refusal(spec, target, texts)}


def _refusal(spec, target: str, texts: list[str]) -> dict:
    """The PTX one architecture below ``min_cc``, its ``.target`` lowered to it, through ptxas:
    ``refused`` per function, the features ptxas says need a newer target (``needs_newer``:
    ``[feature, target]``, each once), the instructions it says the target lacks
    (``unsupported``) and the log's tail. Below the oldest architecture the toolkit knows: the
    PTX as it is, for sm_70."""
    older = [cc for cc in CAPABILITY_ARCHS if cc < spec.min_cc]
    arch = sm(max(older)) if older else TOOLKIT_FLOOR
    lowered = [t.replace(f".target {target}", f".target {arch}") if older else t for t in texts]
    verdicts = [_verdict(text, arch) for text in lowered]
    log = "\n".join(log for _, log in verdicts)
    needs_newer = re.findall(r"Feature '([^']+)' requires \.target (sm_\w+)", log)
    unsupported = re.findall(rf"Instruction '([^']+)' not supported on \.target '{arch}'", log)
    return {"arch": arch, "refused": [not ok for ok, _ in verdicts],
            "needs_newer": [list(p) for p in sorted(set(needs_newer))],
            "unsupported": sorted(set(unsupported)), "log": log[-_LOG_TAIL:]}


#: The smallest PTX that uses a Hopper-only instruction (chapter 5 assembles it for sm_90 and
#: sm_90a; the verdicts are recorded with the other facts, so a GPU machine without the pinned
#: ptxas wheel prints the same ones).
WGMMA_PROBE = (".version 8.0\n.target {target}\n.address_size 64\n"
               ".visible .entry probe()\n{{\n  wgmma.fence.sync.aligned;\n  ret;\n}}\n")


def wgmma_probe() -> dict[str, tuple[bool, str]]:
    """``wgmma.fence`` assembled for sm_90 and for sm_90a: target -> (accepted, messages)."""
    return {t: assemble(WGMMA_PROBE.format(target=t), t) for t in ("sm_90", "sm_90a")}


# ----------------------------------------------------------------------------- reports

def report(name: str) -> list[CompileReport]:
    """Compiler facts for every function of the registered kernel ``name`` (sm_90), or for
    one ``module:function`` that is not a registered matmul (e.g. the roofline kernels)."""
    return [CompileReport(**d) for d in _get("report", name)]


def resident_blocks(name: str) -> int:
    """Blocks of the registered kernel ``name`` that one SM holds at once (sm_90 limits): its
    launch configuration's threads and shared memory, its first function's registers."""
    from lab import model
    from lab.kernels import get_spec

    cfg = get_spec(name).config
    return model.blocks_per_sm(cfg.threads, report(name)[0].registers, cfg.shared_bytes)


def table(names) -> list[dict]:
    """One summary row per registered kernel (its main — first — function)."""
    prefetch(names)
    return [report(n)[0].summary() for n in names]


if __name__ == "__main__":  # worker: python -m lab.compiler report|ptx|capability NAME ...
    print(json.dumps(_compute(sys.argv[1], sys.argv[2:])))
