"""The inline-PTX intrinsics of lab.ptx.

* Offline (any machine): each intrinsic, in a small probe kernel, compiles for sm_90 and its
  SASS holds the instruction it should (HMMA, LDSM[.MT88], LDGSTS + DEPBAR) — run in a
  subprocess with ``LAB_DEVICE=compile`` (real numba-cuda, no GPU). Every registered
  tensor-core kernel's SASS holds HMMA (the fed ones LDSM and LDGSTS in the right ratio to
  it) and spills nothing.
* On a GPU: each intrinsic against the NumPy model of its fragment layout (lab.fragments):
  ``python -m pytest tests/test_ptx.py`` on the H200.
* Under the simulator: the intrinsics are stubs that raise a clear error.
"""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import lab  # noqa: F401  (device decided first)
from lab import device, fp8, fragments, ptx
from numba import cuda, uint16, uint32

gpu = pytest.mark.skipif(not device.GPU, reason="needs a GPU (inline PTX)")


# ----------------------------------------------------------------------------- probes

@cuda.jit
def mma_f16_probe(a_regs, b_regs, c_regs, out):
    lane = cuda.threadIdx.x
    a = (a_regs[lane, 0], a_regs[lane, 1], a_regs[lane, 2], a_regs[lane, 3])
    b = (b_regs[lane, 0], b_regs[lane, 1])
    c = (c_regs[lane, 0], c_regs[lane, 1], c_regs[lane, 2], c_regs[lane, 3])
    d = ptx.mma_f16(a, b, c)
    for i in range(4):
        out[lane, i] = d[i]


@cuda.jit
def mma_bf16_probe(a_regs, b_regs, c_regs, out):
    lane = cuda.threadIdx.x
    a = (a_regs[lane, 0], a_regs[lane, 1], a_regs[lane, 2], a_regs[lane, 3])
    b = (b_regs[lane, 0], b_regs[lane, 1])
    c = (c_regs[lane, 0], c_regs[lane, 1], c_regs[lane, 2], c_regs[lane, 3])
    d = ptx.mma_bf16(a, b, c)
    for i in range(4):
        out[lane, i] = d[i]


SHARED_HALVES = 1024     # 2 KB of shared memory for the ldmatrix probes


def _ldmatrix_probe(load, count):
    if count == 1:
        @cuda.jit
        def probe(mem, row_starts, out):
            smem = cuda.shared.array(SHARED_HALVES, dtype=uint16)
            lane = cuda.threadIdx.x
            for i in range(lane, SHARED_HALVES, 32):
                smem[i] = mem[i]
            cuda.syncthreads()
            out[lane, 0] = load(ptx.shared_address(smem) + uint32(2 * row_starts[lane]))
        return probe

    @cuda.jit
    def probe(mem, row_starts, out):
        smem = cuda.shared.array(SHARED_HALVES, dtype=uint16)
        lane = cuda.threadIdx.x
        for i in range(lane, SHARED_HALVES, 32):
            smem[i] = mem[i]
        cuda.syncthreads()
        regs = load(ptx.shared_address(smem) + uint32(2 * row_starts[lane]))
        for i in range(count):
            out[lane, i] = regs[i]
    return probe


LDMATRIX = {(count, trans): _ldmatrix_probe(getattr(ptx, f"ldmatrix_x{count}"
                                                          f"{'_trans' if trans else ''}"), count)
            for count in (1, 2, 4) for trans in (False, True)}


@cuda.jit
def cp_async_probe(src, chunk_of, out):
    """Thread t copies 16-byte chunk chunk_of[t] of src into shared chunk t, in two groups."""
    smem = cuda.shared.array(512, dtype=uint32)      # 128 chunks of 16 bytes
    t = cuda.threadIdx.x
    base = ptx.shared_address(smem)
    src_addr = ptx.global_address(src)
    ptx.cp_async_16(base + uint32(16 * t), src_addr + 16 * chunk_of[t])
    ptx.cp_async_commit()
    ptx.cp_async_16(base + uint32(16 * (t + 64)), src_addr + 16 * chunk_of[t + 64])
    ptx.cp_async_commit()
    ptx.cp_async_wait(1)
    ptx.cp_async_wait(0)
    cuda.syncthreads()
    for i in range(t, 512, 64):
        out[i] = smem[i]


@cuda.jit
def pack_probe(lo, hi, out):
    i = cuda.threadIdx.x
    out[i] = ptx.pack_b16(lo[i], hi[i])


PROBES = {
    "mma_f16": (mma_f16_probe, "void(uint32[:, ::1], uint32[:, ::1], float32[:, ::1], "
                               "float32[:, ::1])", {"HMMA": 1}),
    "mma_bf16": (mma_bf16_probe, "void(uint32[:, ::1], uint32[:, ::1], float32[:, ::1], "
                                 "float32[:, ::1])", {"HMMA": 1}),
    "cp_async": (cp_async_probe, "void(uint32[::1], int64[::1], uint32[::1])",
                 {"LDGSTS": 2, "LDGDEPBAR": 2, "DEPBAR": 2}),
    "pack_b16": (pack_probe, "void(float16[::1], float16[::1], uint32[::1])", {}),
}
for (_count, _trans), _probe in LDMATRIX.items():
    PROBES[f"ldmatrix_x{_count}{'_trans' if _trans else ''}"] = (
        _probe, "void(uint16[::1], int32[::1], uint32[:, ::1])", {"LDSM": 1})


def _sass_facts() -> dict:
    """Compile every probe for sm_90 (needs real numba-cuda): opcode → count, per probe."""
    from lab import compiler

    facts = {}
    for name, (probe, sig, _) in PROBES.items():
        report = compiler.compile_function(probe.py_func, sig, name)
        opcodes = [op for _, op, _ in compiler.parse_sass(report.sass)[0]]
        facts[name] = {"mix": report.mix, "ldsm": sorted({o for o in opcodes
                                                           if o.startswith("LDSM")}),
                       "spills": report.spill_stores + report.spill_loads}
    return facts


@pytest.fixture(scope="module")
def sass_facts(offline_worker):
    if device.MODE in ("gpu", "compile"):
        return _sass_facts()
    return offline_worker(__file__, "--sass")


# ----------------------------------------------------------------------------- offline

@pytest.mark.parametrize("name", sorted(PROBES))
def test_probe_compiles_to_the_instruction(sass_facts, name):
    facts = sass_facts[name]
    for opcode, count in PROBES[name][2].items():
        got = sum(n for op, n in facts["mix"].items() if op.split(".")[0] == opcode)
        assert got == count, f"{name}: {opcode} ×{got} in SASS, expected ×{count}"
    assert facts["spills"] == 0


def test_ldmatrix_trans_is_the_transposing_form(sass_facts):
    for count in (1, 2, 4):
        plain = sass_facts[f"ldmatrix_x{count}"]["ldsm"]
        trans = sass_facts[f"ldmatrix_x{count}_trans"]["ldsm"]
        assert all(".MT88" in o for o in trans), trans
        assert not any(".MT88" in o for o in plain), plain


@pytest.mark.skipif(not device.SIMULATOR, reason="simulator only")
def test_stubs_raise_under_the_simulator():
    with pytest.raises(NotImplementedError, match="inline PTX needs a GPU"):
        ptx.mma_f16((0, 0, 0, 0), (0, 0), (0.0, 0.0, 0.0, 0.0))


# ----------------------------------------------------------------------------- the kernels' SASS

@pytest.mark.parametrize("name", ["tc_naive_fp16", "tc_naive_bf16", "tc_smem", "tc_warp64",
                                  "tc_pipeline", "tc_swizzle", "tc_fp16", "tc_bf16"])
def test_sass_uses_tensor_cores_without_spills(name):
    from lab import compiler
    from lab.kernels.k08_tc_pipeline import RUNG_CONFIGS

    rep = compiler.report(name)[0]
    assert rep.spill_stores == 0 and rep.spill_loads == 0 and rep.stack_bytes == 0
    assert rep.mix.get("HMMA", 0) > 0
    if name in RUNG_CONFIGS:
        cfg = RUNG_CONFIGS[name]
        steps = cfg.bk // 16
        mt, nt = cfg.wm // 16, cfg.wn // 8
        loop = rep.loop_mix
        # The hottest loop is one k-slice, or several when the compiler unrolls it.
        slices, rest = divmod(loop.get("HMMA", 0), steps * mt * nt)
        assert slices >= 1 and rest == 0
        assert loop.get("LDSM") == slices * steps * (mt + nt // 2)
        assert loop.get("LDGSTS.128") == slices * (cfg.bm + cfg.bn) * cfg.bk // 8 // cfg.threads
        assert rep.registers <= 255


# ----------------------------------------------------------------------------- on a GPU

def _random_halves(rng, shape, kind):
    x = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if kind == "f16":
        return x.astype(np.float16)
    return fp8.bf16_bits(x)


@gpu
@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_mma_matches_the_fragment_model(kind, rng):
    a = _random_halves(rng, (16, 16), kind)
    b = _random_halves(rng, (16, 8), kind)
    c = rng.uniform(-1, 1, size=(16, 8)).astype(np.float32)
    a_regs, b_regs = fragments.a_fragment(a), fragments.b_fragment(b)
    c_regs = fragments.c_fragment(c)
    out = cuda.device_array((32, 4), dtype=np.float32)
    probe = mma_f16_probe if kind == "f16" else mma_bf16_probe
    probe[1, 32](a_regs, b_regs, c_regs, out)
    got = out.copy_to_host()
    want = fragments.mma(a_regs, b_regs, c_regs, kind)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # … and the whole tile is A·B + C.
    a64 = fragments.to_float64(fragments.bits16(a), kind)
    b64 = fragments.to_float64(fragments.bits16(b), kind)
    np.testing.assert_allclose(fragments.c_matrix(got), a64 @ b64 + c, rtol=1e-5, atol=1e-5)


@gpu
@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_matches_the_model(count, trans, rng):
    mem = rng.integers(0, 2 ** 16, size=SHARED_HALVES, dtype=np.uint16)
    # 32 distinct, 16-byte aligned rows in a random order (lanes beyond 8·count ignored).
    row_starts = (rng.permutation(SHARED_HALVES // 8)[:32] * 8).astype(np.int32)
    out = cuda.device_array((32, count), dtype=np.uint32)
    LDMATRIX[(count, trans)][1, 32](mem, row_starts, out)
    want = fragments.ldmatrix(mem, row_starts, count, trans)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpu
def test_ldmatrix_feeds_mma():
    """A 16×16 tile stored row-major in shared memory, read with ldmatrix.x4, is exactly
    the A fragment; a 16×8 B tile stored k-major, read with .x2.trans, the B fragment."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, size=(16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, size=(16, 8)).astype(np.float16)
    mem = np.zeros(SHARED_HALVES, dtype=np.uint16)
    mem[:256] = a.view(np.uint16).ravel()
    mem[256:384] = b.view(np.uint16).ravel()
    lanes = np.arange(32)
    a_rows = ((lanes % 16) * 16 + (lanes // 16) * 8).astype(np.int32)
    b_rows = (256 + (lanes % 16) * 8).astype(np.int32)
    out_a = cuda.device_array((32, 4), dtype=np.uint32)
    out_b = cuda.device_array((32, 2), dtype=np.uint32)
    LDMATRIX[(4, False)][1, 32](mem, a_rows, out_a)
    LDMATRIX[(2, True)][1, 32](mem, b_rows, out_b)
    np.testing.assert_array_equal(out_a.copy_to_host(), fragments.a_fragment(a))
    np.testing.assert_array_equal(out_b.copy_to_host(), fragments.b_fragment(b))


@gpu
def test_cp_async_copies_16_bytes(rng):
    src = rng.integers(0, 2 ** 32, size=4 * 200, dtype=np.uint32)
    chunk_of = rng.permutation(200)[:128].astype(np.int64)
    out = cuda.device_array(512, dtype=np.uint32)
    cp_async_probe[1, 64](src, chunk_of, out)
    want = src.reshape(200, 4)[chunk_of].ravel()
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpu
def test_pack_b16_low_half_first(rng):
    lo = rng.uniform(-1, 1, 32).astype(np.float16)
    hi = rng.uniform(-1, 1, 32).astype(np.float16)
    out = cuda.device_array(32, dtype=np.uint32)
    pack_probe[1, 32](lo, hi, out)
    np.testing.assert_array_equal(out.copy_to_host(),
                                  fragments.pack(fragments.bits16(lo), fragments.bits16(hi)))


if __name__ == "__main__" and "--sass" in sys.argv:
    print(json.dumps(_sass_facts()))
