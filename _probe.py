"""Screen candidate configurations (3 processes) and profile at SASS level under ncu."""
import json, os, subprocess, sys, tempfile
from dataclasses import replace
import numpy as np


def extra_configs(H):
    from lab.kernels import k09_hopper as K
    lean, ring = K.RUNG_CONFIGS["wgmma_lean"], K.RUNG_CONFIGS["wgmma_ring"]
    return {"U16": replace(lean, uniform=True),
            "U16 g16": replace(lean, uniform=True, group_m=16),
            "U32": replace(ring, uniform=True),
            "U32 g16": replace(ring, uniform=True, group_m=16)}


def patch():
    from lab.experiments import hopper_past as H
    extra = extra_configs(H)
    for v in extra.values():
        v.validate()
    orig = H.explore_configs
    H.explore_configs = lambda: {**orig(), **extra}
    labels = [H.STEPS, "U16", "U16 g16", H.F32_RING, "U32", "U32 g16"]
    H.FINAL = tuple(labels)
    H.FINAL_FP8 = ()
    return H, labels


def ncu_child():
    """One launch each at 4096³ FP16: rung 13, rung 14, the 4-stage variants, torch.mm f16,
    cuBLAS FP32 out."""
    H, labels = patch()
    from numba import cuda
    from lab import bench
    n = 4096
    a, b = bench.random_inputs(n, n, n, np.float16, np.random.default_rng(7))
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_c = cuda.device_array((n, n), dtype=np.float32)
    names = [H.PAST + lb for lb in labels[:2]] + [H.PAST + lb for lb in labels[3:5]] + [H.TORCH_F16, "cublas_fp16"]
    calls = [H.profile_launcher(nm, d_a, d_b, d_c) for nm in names]
    for nm, call in zip(names, calls):
        call()
        cuda.synchronize()
        print("LAUNCHED", nm, flush=True)


if sys.argv[1:2] == ["--child"]:
    H, _ = patch()
    H.child(sys.argv[2], int(sys.argv[3]), "final", "", 3)
    sys.exit(0)
if sys.argv[1:2] == ["--ncu"]:
    ncu_child()
    sys.exit(0)

H, labels = patch()
from lab.experiments.hopper_profile import _read_rows
out = os.environ.get("OUT", "/tmp")
lock = os.path.join(tempfile.mkdtemp(), "gpu.lock"); open(lock, "a").close()
procs = []
for i in range(3):
    log = open(f"{out}/qchild{i}.log", "w")
    procs.append(subprocess.Popen([sys.executable, __file__, "--child", lock, str(i)],
                                  stdout=log, stderr=subprocess.STDOUT))
for p in procs:
    p.wait()
rows = []
for i in range(3):
    rows += [r for r in _read_rows(f"{out}/qchild{i}.log")]
summ = H.summarize(rows)
json.dump({"rows": rows + summ}, open(f"{out}/quick.json", "w"), indent=1, default=float)
bad = [r for r in rows if r.get("part") == "check" and not r.get("passed")]
print("checks", sum(r.get("part") == "check" for r in rows), "failed", len(bad))
for r in bad[:10]:
    print("FAIL", r.get("kernel"), r.get("shape"), r.get("line"))
for r in rows:
    if r.get("part") == "compile" or r.get("error"):
        print("ERR", r)
for r in sorted(summ, key=lambda r: (r["m"], r["dtype"], r["out"], r["kernel"])):
    print(f"{r['m']} {r['dtype']:9s} {r['out']:4s} {r['kernel'][:60]:60s} {r['tflops']:7.1f} "
          f"{(r['ratio'] or 0):.4f} ({(r['ratio_min'] or 0):.4f}-{(r['ratio_max'] or 0):.4f})")
