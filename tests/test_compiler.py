"""lab.compiler: the offline report of a kernel (registers, spills, SASS mix), and its disk
cache shared by parallel processes."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from lab import compiler

ROOT = Path(__file__).resolve().parents[1]


def test_compiler_report_for_naive():
    rep = compiler.report("naive")[0]
    assert rep.registers > 0
    assert rep.spill_stores == 0 and rep.spill_loads == 0
    assert rep.mix.get("FFMA", 0) > 0 and rep.sass


def test_parallel_writers_of_one_entry_never_leave_half_a_file(tmp_path, monkeypatch):
    """Test workers share the disk cache: three processes write one entry over and over, each
    its own value, while this one reads it; every read finds one whole value."""
    monkeypatch.setenv("LAB_CACHE_DIR", str(tmp_path))
    values = [{"writer": w, "text": str(w) * (200_000 + 50_000 * w)} for w in range(3)]
    script = textwrap.dedent("""
        import sys
        from lab import compiler
        w = int(sys.argv[1])
        for _ in range(40):
            compiler._cache_put("parallel", "entry", {"writer": w,
                                                      "text": str(w) * (200_000 + 50_000 * w)})
    """)
    env = dict(os.environ, LAB_DEVICE="simulator")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(w)], cwd=ROOT, env=env)
               for w in range(3)]
    reads = []
    while any(w.poll() is None for w in writers):
        if compiler._cache_file("parallel", "entry").exists():
            reads.append(compiler._cache_get("parallel", "entry"))
    assert all(w.returncode == 0 for w in writers)
    reads.append(compiler._cache_get("parallel", "entry"))
    assert len(reads) > 1 and all(r in values for r in reads), \
        f"{sum(r not in values for r in reads)} of {len(reads)} reads found a torn entry"
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == \
        [compiler._cache_file("parallel", "entry").name]
