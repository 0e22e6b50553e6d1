"""lab.compiler: the offline report of a kernel (registers, spills, SASS mix)."""
from lab import compiler


def test_compiler_report_for_naive():
    rep = compiler.report("naive")[0]
    assert rep.registers > 0
    assert rep.spill_stores == 0 and rep.spill_loads == 0
    assert rep.mix.get("FFMA", 0) > 0 and rep.sass
