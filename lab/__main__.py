"""Command line: ``python -m lab list|check|compile|measure``.

* ``list`` — the registered kernels and the experiments.
* ``check`` — every registered kernel on this device (simulator: small shapes, the kernels that
  run there), odd and round shapes, fresh random inputs; exit status 1 on any failure.
* ``compile [NAME ...]`` — registers, spills, stack, shared memory, inner-loop mix (sm_90).
* ``measure EXPERIMENT [--out DIR]`` — GPU only; writes ``<DIR>/<gpu>/<experiment>.json``.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import lab
from lab import bench, device, experiments, results

#: Shapes (M, N, K) every kernel is checked on: degenerate, odd, non-square, round.
SIM_SHAPES = [(1, 1, 1), (17, 33, 5), (65, 1, 130), (65, 130, 1), (31, 47, 70), (64, 64, 64)]
GPU_SHAPES = SIM_SHAPES + [(257, 129, 67), (1000, 1030, 999), (512, 512, 512),
                           (1024, 1024, 1024)]


def _progress(iterable, **kw):
    try:
        from tqdm.auto import tqdm
        return tqdm(iterable, **kw)
    except ImportError:
        return iterable


def cmd_list(_args) -> int:
    for name, spec in lab.REGISTRY.items():
        where = "GPU+simulator" if spec.simulator else "GPU only"
        print(f"{name:<24} ch{spec.chapter}  {spec.dtype_name:<9} {where:<14} {spec.title}")
    print("\nexperiments:", ", ".join(experiments.names()))
    return 0


def cmd_check(args) -> int:
    print(device.describe())
    shapes = GPU_SHAPES if device.GPU else SIM_SHAPES
    names = args.kernels or list(lab.REGISTRY)
    failures = 0
    for name in names:
        spec = lab.get_spec(name)
        if device.SIMULATOR and not spec.simulator:
            print(f"{name:<22} skipped: needs a GPU (inline PTX the simulator cannot run)")
            continue
        for m, n, k in shapes:
            verdict = bench.check(name, m, n, k)
            failures += not verdict.passed
            if not verdict.passed or args.verbose:
                print(verdict.line())
        print(f"{name:<22} {len(shapes)} shapes checked")
    print("all kernels passed" if not failures else f"{failures} check(s) FAILED")
    return 1 if failures else 0


def cmd_compile(args) -> int:
    from lab import compiler, tables

    names = args.kernels or [n for n, s in lab.REGISTRY.items() if s.compile]
    print(tables.render(compiler.table(names)))
    return 0


def cmd_measure(args) -> int:
    bench.require_gpu("measure")
    module = experiments.get(args.experiment)
    out = module.run(_progress)
    command = "python -m lab " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    path = results.save(args.experiment, out["rows"], parameters=out["parameters"],
                        command=command, row_fields=out.get("row_fields"),
                        notes=out.get("notes"), root=Path(args.out) if args.out else None)
    print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="registered kernels and experiments").set_defaults(func=cmd_list)
    p = sub.add_parser("check", help="check every kernel against float64")
    p.add_argument("kernels", nargs="*")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("compile", help="registers/spills/SASS mix for sm_90 (no GPU needed)")
    p.add_argument("kernels", nargs="*")
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("measure", help="run an experiment on the GPU and save its results")
    p.add_argument("experiment")
    p.add_argument("--out", help="results root (default: lab/results)")
    p.set_defaults(func=cmd_measure)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
