"""Command-line tools for learners and teachers.

    python -m helpers info                     which backend runs, and the device card
    python -m helpers ladder [--size N]        every registered kernel: verified, and on a GPU timed
    python -m helpers check FILE.cu --kernel NAME --grid X,Y --block X,Y --mnk M,N,K
                                               run any kernel of the course signature once and verify it
Add --backend cpu|gpu to any of them to choose the backend.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from . import backend
from .errors import CourseError, KernelCompileError, VerificationError

EXIT_WRONG, EXIT_USAGE, EXIT_FAILED = 1, 2, 3


def _ints(text: str, what: str, count: tuple[int, ...]) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} takes whole numbers separated by commas, got {text!r}")
    if len(values) not in count:
        raise argparse.ArgumentTypeError(f"{what} takes {' or '.join(map(str, count))} numbers, got {text!r}")
    return values


def cmd_info(args) -> int:
    print(backend.banner())
    print(backend.current().device_info().card())
    return 0


def cmd_ladder(args) -> int:
    from . import bench, stages, verify
    rows = []
    for v in stages.variants():
        report = verify.check_catalogue(v)
        rows.append({"variant": v.name, "verified": report.ok, "summary": v.summary})
        if not report.ok:
            print(report, file=sys.stderr)
    on_gpu = backend.name() == "gpu"
    if on_gpu:
        timed = {r["variant"]: r for r in bench.ladder(args.size, stages.variants(), n_repeat=args.repeat)}
        cublas = timed.pop("cublas_sgemm")
        for r in rows:
            r.update({k: v for k, v in timed[r["variant"]].items() if k not in r})
    print(backend.banner())
    size = f"{args.size}x{args.size}x{args.size}"
    print(f"Verified on the shape catalogue; " + (f"timed at {size} (median of {args.repeat})." if on_gpu else
          "no timings: the CPU emulator's speed says nothing about a GPU (see results/ for GPU runs)."))
    header = f"{'kernel':<22} {'verified':<9}" + (f" {'ms':>9} {'TFLOP/s':>8} {'% cuBLAS':>9}" if on_gpu else "")
    print(header)
    if on_gpu:
        print(f"{'cuBLAS (TF32 off)':<22} {'-':<9} {cublas['median_ms']:>9.3f} {cublas['tflops']:>8.2f} {100.0:>9.1f}")
    for r in rows:
        line = f"{r['variant']:<22} {'yes' if r['verified'] else 'NO':<9}"
        if on_gpu:
            line += f" {r['median_ms']:>9.3f} {r['tflops']:>8.2f} {r['pct_cublas']:>9.1f}"
        print(line)
    if args.json:
        out = {"size": args.size, "backend": backend.name(), "rows": rows}
        if on_gpu:
            out["cublas"] = cublas
            out["provenance"] = bench.provenance(
                f"python -m helpers ladder --size {args.size} --repeat {args.repeat}")
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if all(r["verified"] for r in rows) else EXIT_WRONG


def cmd_check(args) -> int:
    from . import verify
    from .gemm import launch_args
    from .kernels import load_kernel
    M, N, K = args.mnk
    name = args.kernel + (f"<{args.template}>" if args.template else "")
    kernel = load_kernel(args.file, name)
    s = verify.Shape("check", M, N, K, alpha=args.alpha, beta=args.beta)
    A, B, C0 = verify.random_operands(s, np.random.default_rng())
    bk = backend.current()
    dC = bk.to_device(C0)
    kernel(args.grid, args.block, launch_args(M, N, K, s.alpha, bk.to_device(A), bk.to_device(B), s.beta, dC),
           shared_mem=args.shared_mem)
    ref, tol = verify.reference(A, B, C0, s.alpha, s.beta)
    result = verify.compare(bk.to_host(dC), C0, ref, tol, s)
    print(f"{name} from {args.file}, grid {args.grid}, block {args.block}, backend {backend.name()}:")
    print(result.details().replace("check", "random data", 1))
    return 0 if result.ok else EXIT_WRONG


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m helpers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", choices=("cpu", "gpu"), help="default: the GPU when CuPy sees one")
    sub.add_parser("info", parents=[common], help="the backend and device card")
    lad = sub.add_parser("ladder", parents=[common], help="verify (and on a GPU time) every registered kernel")
    lad.add_argument("--size", type=int, default=4096, help="M = N = K for the timings (default 4096)")
    lad.add_argument("--repeat", type=int, default=50, help="timed launches per kernel (default 50)")
    lad.add_argument("--json", help="also write the table, with provenance, to this file")
    chk = sub.add_parser("check", parents=[common], help="run one kernel of the course signature and verify it")
    chk.add_argument("file", help="the .cu file")
    chk.add_argument("--kernel", required=True, help="the __global__ function's name")
    chk.add_argument("--template", help="template arguments, e.g. 128,128,8 for NAME<128,128,8>")
    chk.add_argument("--grid", required=True, type=lambda t: _ints(t, "--grid", (1, 2, 3)))
    chk.add_argument("--block", required=True, type=lambda t: _ints(t, "--block", (1, 2, 3)))
    chk.add_argument("--mnk", required=True, type=lambda t: _ints(t, "--mnk", (3,)))
    chk.add_argument("--shared-mem", type=int, default=0, help="dynamic shared memory in bytes")
    chk.add_argument("--alpha", type=float, default=1.25)
    chk.add_argument("--beta", type=float, default=-0.75)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.backend:
            backend.use(args.backend)
        return {"info": cmd_info, "ladder": cmd_ladder, "check": cmd_check}[args.command](args)
    except (KernelCompileError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except VerificationError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_WRONG
    except CourseError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
