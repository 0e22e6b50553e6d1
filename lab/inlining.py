"""Numba's IR inliner, made to copy each inlined function once instead of once per block.

The kernels of chapters 4–7 are built from device functions marked ``inline="always"``, which
Numba inlines in its own IR before LLVM sees the code. To inline a function it deep-copies the
function's IR (twice: one copy to splice in, one kept unmutated), block by block — and each
block's copy starts a fresh copy memo. Every block refers to the function's variable scope, and
the scope to all of the function's variables, so each block drags a complete copy of every
variable with it: the work grows as blocks × variables. For the warp-tiled FP32 kernel, whose
body has 162 blocks and 3,206 variables once its helpers are inlined, that copying was about
half of a 6-second compile.

:func:`install` gives the blocks of one inlined function one shared memo, so the scope and its
variables are copied once and every copied block refers to the same copy — as every original
block refers to the same scope. The generated code does not change (``tests/test_inlining.py``
compares the PTX, and the PTX of all registered kernels was compared once, with and without
it: identical); compiling all of them takes about a third less time. It is installed by
:mod:`lab.device` wherever Numba compiles (a GPU, or offline compilation), for numba-cuda's
inliner as pinned in ``requirements.txt``; if that inliner changes shape, nothing is patched and
compiles are just slower.
"""
from __future__ import annotations

import copy

_ORIGINAL = None


class _SharedMemoCopy:
    """Stands in for the ``copy`` module inside Numba's inliner (whose only use of it is that
    block-by-block copy): while a function is being inlined, ``deepcopy(block)`` shares one memo
    with the other blocks of the same scope — one memo per copy of the function."""

    def __init__(self):
        self.stack: list[dict] = []          # per inlining: id(scope) -> (scope, memo)

    def deepcopy(self, x, memo=None):
        if memo is None and self.stack and isinstance(x, self.block_type):
            memos = self.stack[-1]
            memo = memos.setdefault(id(x.scope), (x.scope, {}))[1]
        return copy.deepcopy(x, memo)

    def __getattr__(self, name):
        return getattr(copy, name)


def install() -> bool:
    """Patch numba-cuda's inliner (once); returns whether it is patched."""
    global _ORIGINAL
    try:
        from numba.cuda.core import inline_closurecall as icc
    except ImportError:
        return False
    if _ORIGINAL is not None:
        return True
    worker = getattr(icc, "InlineWorker", None)
    if worker is None or getattr(icc, "copy", None) is not copy:
        return False                          # not the inliner this was written for
    from numba.cuda.core import ir

    _ORIGINAL = worker.inline_ir
    shim = _SharedMemoCopy()
    shim.block_type = ir.Block

    def inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs=None):
        shim.stack.append({})
        try:
            return _ORIGINAL(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs)
        finally:
            shim.stack.pop()

    inline_ir.__doc__ = _ORIGINAL.__doc__
    icc.copy = shim
    worker.inline_ir = inline_ir
    return True


def uninstall() -> None:
    """Numba's inliner as it was (for the test that compares the two)."""
    global _ORIGINAL
    if _ORIGINAL is None:
        return
    from numba.cuda.core import inline_closurecall as icc

    icc.InlineWorker.inline_ir = _ORIGINAL
    icc.copy = copy
    _ORIGINAL = None
