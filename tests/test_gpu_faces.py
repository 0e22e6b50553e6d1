"""On a Hopper GPU with PyTorch (skipped elsewhere): the user-facing calls as a model makes them,
on the paths the registered kernels' GPU checks do not reach.

* ``lab.gemm``'s first call at a decode shape times its candidates in turn after flushing the
  L2 by a read (:func:`lab.timing.flush_l2`), keeps a winner, and the result it then writes
  (output poisoned with NaN first) matches float64;
* ``lab.grouped_gemm``'s repeat path: a first call with ``check_bounds=False`` records its
  launch, the second replays it in one driver call, and a third after new offsets are written
  into the same buffer routes the rows as they now say — each against float64 per expert;
  ``lab.grouped_scaled_gemm``'s the same, new scale values in the same buffers included.
"""
from __future__ import annotations

import pytest

from lab import device

torch = pytest.importorskip("torch") if device.GPU else None
pytestmark = pytest.mark.skipif(
    not device.GPU or torch is None or not torch.cuda.is_available()
    or torch.cuda.get_device_capability() != (9, 0),
    reason="needs a Hopper GPU (compute capability 9.0) and PyTorch")


def _rel_error(got, ref) -> float:
    assert not got.isnan().any(), "NaN left in the output"
    return float((got.double() - ref).abs().max() / ref.abs().max())


def test_a_first_call_tunes_with_a_read_flush_and_writes_the_product():
    import lab
    from lab import timing

    torch.manual_seed(0)
    A = torch.rand(1, 4096, device="cuda", dtype=torch.float16) - 0.5
    B = torch.rand(4096, 14336, device="cuda", dtype=torch.float16) - 0.5
    C = torch.full((1, 14336), float("nan"), device="cuda", dtype=torch.float16)
    choice = lab.gemm.explain(A, B, C)
    assert choice.candidates, "a decode shape has candidates to time"
    lab.gemm(A, B, C)
    torch.cuda.synchronize()
    assert _rel_error(C, A.double() @ B.double()) < 1e-2
    assert any(read for (_, read) in timing._FLUSH), "the tuning flushed by reading"
    assert lab.gemm.explain(A, B, C).tuned.startswith("first call timed")
    C.fill_(float("nan"))
    lab.gemm(A, B, C)                       # the repeat path
    torch.cuda.synchronize()
    assert _rel_error(C, A.double() @ B.double()) < 1e-2


def test_a_grouped_repeat_replays_and_follows_new_offsets_in_the_same_buffer():
    import lab
    import lab.grouped as G

    torch.manual_seed(1)
    experts, k, n = 8, 1024, 512
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device="cuda")
    offsets[1:] = torch.tensor([0, 1, 63, 65, 130, 7, 0, 200], device="cuda").cumsum(0)
    rows = int(offsets[-1])
    A = (torch.rand(rows, k, device="cuda") - 0.5).bfloat16()
    B = (torch.rand(experts, k, n, device="cuda") - 0.5).bfloat16()
    C = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
    routings = ([0, 1, 63, 65, 130, 7, 0, 200], [0, 1, 63, 65, 130, 7, 0, 200],
                [100, 0, 50, 16, 130, 66, 30, 74])
    for call, counts in enumerate(routings):
        offsets[1:] = torch.tensor(counts, device="cuda").cumsum(0)
        C.fill_(float("nan"))
        lab.grouped_gemm(A, B, C, offsets=offsets, check_bounds=False)
        torch.cuda.synchronize()
        ends = offsets.tolist()
        for e in range(experts):
            if ends[e + 1] > ends[e]:
                ref = A[ends[e]:ends[e + 1]].double() @ B[e].double()
                assert _rel_error(C[ends[e]:ends[e + 1]], ref) < 2e-2, (call, e)
        if call == 0:
            assert len(G._HOT) >= 1, "the first unchecked call recorded its repeat path"


def test_an_fp8_grouped_repeat_replays_and_follows_new_offsets_and_scales():
    """lab.grouped_scaled_gemm with the checks off: the first call records, the second
    replays, the third follows new offsets and new scale values written into the same
    buffers — each against the float64 product of the dequantised operands, per expert."""
    import numpy as np

    import lab
    import lab.grouped as G
    from lab import fp8

    rng = np.random.default_rng(5)
    experts, k, n = 4, 512, 256
    routings = ([1, 0, 65, 130], [1, 0, 65, 130], [64, 63, 0, 69])
    rows = max(sum(r) for r in routings)
    ca, sa = fp8.quantize(rng.standard_normal((rows, k)), "e4m3", fp8.ACT_BLOCK)
    cb, sb = fp8.quantize(rng.standard_normal((experts * n, k)), "e4m3", fp8.WEIGHT_BLOCK)

    def gpu(x, dtype=None):
        t = torch.from_numpy(np.ascontiguousarray(x)).cuda()
        return t.view(dtype) if dtype is not None else t

    A, Bt = gpu(ca, torch.float8_e4m3fn), gpu(cb.reshape(experts, n, k), torch.float8_e4m3fn)
    scale_a = gpu(sa)
    scale_b = gpu(sb.reshape(experts, n // 128, k // 128))
    offsets = torch.zeros(experts + 1, dtype=torch.int64, device="cuda")
    C = torch.empty(rows, n, device="cuda", dtype=torch.bfloat16)
    for call, counts in enumerate(routings):
        if call == 2:                         # new scale values in the same buffers
            scale_a.mul_(2.0)
            scale_b.mul_(0.5)
        offsets[1:] = torch.tensor(counts, device="cuda").cumsum(0)
        C.fill_(float("nan"))
        lab.grouped_scaled_gemm(A, Bt, C, scale_a=scale_a, scale_b=scale_b, offsets=offsets,
                                check_bounds=False, check_scales=False)
        torch.cuda.synchronize()
        a64 = fp8.dequantize(ca, scale_a.cpu().numpy(), "e4m3", fp8.ACT_BLOCK)
        b64 = fp8.dequantize(cb, scale_b.cpu().numpy().reshape(experts * n // 128, k // 128),
                             "e4m3", fp8.WEIGHT_BLOCK)
        ends = offsets.tolist()
        for e in range(experts):
            if ends[e + 1] > ends[e]:
                lo, hi = ends[e], ends[e + 1]
                ref = torch.from_numpy(a64[lo:hi] @ b64[e * n:(e + 1) * n].T)
                assert _rel_error(C[lo:hi].cpu(), ref) < 2e-2, (call, e)
        if call == 0:
            assert len(G._HOT) >= 1, "the first unchecked call recorded its repeat path"


@pytest.mark.parametrize("blocks, out", [(False, "bfloat16"), (False, "float32"),
                                         (True, "bfloat16")])
def test_scaled_gemm_takes_torch_fp8_tensors_and_their_scales(blocks, out):
    """PyTorch float8_e4m3fn operands (Bᵀ as stored), per-tensor or block scales on the GPU,
    C poisoned first: the product of the dequantised operands, past every tile edge."""
    import numpy as np

    from lab import fp8
    from lab.scaled import scaled_gemm

    rng = np.random.default_rng(2)
    m, n, k = 129, 300, 400
    block = (fp8.ACT_BLOCK, fp8.WEIGHT_BLOCK) if blocks else (None, None)
    ca, sa = fp8.quantize(rng.standard_normal((m, k)), "e4m3", block[0])
    cb, sb = fp8.quantize(rng.standard_normal((n, k)), "e4m3", block[1])

    def gpu(codes):
        return torch.from_numpy(codes).cuda().view(torch.float8_e4m3fn)

    C = torch.full((m, n), float("nan"), device="cuda", dtype=getattr(torch, out))
    scaled_gemm(gpu(ca), gpu(cb), C, scale_a=torch.from_numpy(sa).cuda(),
                scale_b=torch.from_numpy(sb).cuda())
    torch.cuda.synchronize()
    ref = torch.from_numpy(fp8.reference(ca, cb, sa, sb, blocks=blocks)).cuda()
    assert _rel_error(C, ref) < 2e-2
