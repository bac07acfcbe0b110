"""`python -m helpers dispatch | dispatch-table | sweep`: the shape-aware dispatcher of stage 11, and the library
call (helpers.sgemm) timed as a user makes it."""

from __future__ import annotations

import argparse

from helpers.core import paths
from helpers.core.errors import CourseError
from helpers.measure import bench, dispatch_table, library_sweep
from helpers.run import backend, dispatch, dispatch_tf32, gemm


def _shapes(text: str):
    try:
        shapes = dispatch_table.parse_shapes(text)
        for M, N, K in shapes:     # whole numbers from 1 up, each matrix within the kernels' 32-bit indexing
            gemm.check_problem(M, N, K, None, f"{M}x{N}x{K}")
        return shapes
    except Exception as e:  # argparse shows the message
        raise argparse.ArgumentTypeError(str(e))


def _require_gpu(command: str) -> None:
    """sweep and dispatch-table time kernels on a GPU: said before anything runs (exit status 3, as `tune` without
    a GPU), whatever --backend says."""
    if backend.name() != "gpu":
        raise CourseError(f"`{command}` times kernels on a GPU, and this session runs the CPU emulator "
                         f"({'CuPy sees no GPU' if not backend.gpu_available() else 'the CPU backend was chosen'}), "
                         f"whose times say "
                         f"nothing about a GPU. Fix: run it on a machine with an NVIDIA GPU; the committed "
                         f"measurements are in results/ (`python -m helpers dispatch` reads them anywhere).")


def add_parsers(sub, common) -> None:
    d = sub.add_parser("dispatch", parents=[common], help="which kernel the dispatcher chooses for each shape, and why")
    d.add_argument("--sizes", type=_shapes, default=library_sweep.DEFAULT_SHAPES,
                   help="N (a square) or MxNxK, comma-separated (default: the sweep's shapes)")
    d.add_argument("--precision", choices=("fp32", "tf32"), default="fp32",
                   help="the choices of sgemm(..., precision=...) (default fp32)")
    t = sub.add_parser("dispatch-table", parents=[common],
                       help="GPU: time every candidate at the table's shapes; write results/dispatch_<gpu>_<date>.json")
    t.add_argument("--sizes", type=_shapes, default=dispatch_table.TABLE_SHAPES, help="the shapes to measure")
    t.add_argument("--repeat", type=int, default=30, help="timed launches per candidate (default 30)")
    t.add_argument("--out", help="write here instead of results/")
    s = sub.add_parser("sweep", parents=[common],
                       help="GPU: sgemm(A, B) and sgemm(A, B, precision='tf32') timed as called, beside cuBLAS FP32 and "
                            "TF32, beta = 0 and 1, each verified first; JSON and a table")
    s.add_argument("--sizes", type=_shapes, default=library_sweep.DEFAULT_SHAPES,
                   help="N (a square) or MxNxK, comma-separated (default: a list of squares, odd, K = 512, "
                        "tall-skinny and long-K shapes, 256^3 and 8192^3)")
    s.add_argument("--held-out", type=_shapes, default=(),
                   help="more shapes, marked held out (shapes nothing was tuned for); the targets are judged on them")
    s.add_argument("--repeat", type=int, default=30, help="timed calls per call and round (default 30)")
    s.add_argument("--rounds", type=int, default=3, help="interleaved rounds per shape; the median is kept (default 3)")
    s.add_argument("--out", help="write here instead of results/sweep_<gpu>_<date>.json")


def cmd_dispatch(args) -> int:
    table = dispatch.current_table()
    where = (f"the {table.machine.name}'s table ({paths.rel(table.path)})" if backend.name() == "gpu"
             else f"the {table.machine.name}, from {paths.rel(table.path)} (this is the CPU emulator)")
    print(f"Choices in {args.precision.upper()} for {where}:")
    choose = dispatch.choose if args.precision == "fp32" else dispatch_tf32.choose
    for M, N, K in args.sizes:
        c = choose(M, N, K, table)
        print(f"  {M}x{N}x{K}: {c.label()} [{c.source}] {c.why}")
    return 0


def cmd_dispatch_table(args) -> int:
    _require_gpu("dispatch-table")
    for M, N, K in args.sizes:
        bench.check_timing(M, N, K, args.repeat, min_repeat=10)
    data = dispatch_table.build_table(args.sizes, args.repeat)
    path = dispatch_table.write(data, "dispatch", args.out)
    for r in data["shapes"]:
        b = r["best"]
        print(f"{r['M']}x{r['N']}x{r['K']}: {b['tile']} SPLITS={b['splits']} pad={b['pad']} {b['tflops']:.2f} TFLOP/s, "
              f"{r['pct_cublas']:.1f} % of cuBLAS")
    print(f"wrote {paths.rel(path)}")
    return 0


def cmd_sweep(args) -> int:
    _require_gpu("sweep")
    for M, N, K in (*args.sizes, *args.held_out):
        bench.check_timing(M, N, K, args.repeat, min_repeat=10)
    data = library_sweep.sweep(args.sizes, args.held_out, args.repeat, args.rounds)
    path = dispatch_table.write(data, "sweep", args.out)
    print(library_sweep.table_text(data))
    print(f"wrote {paths.rel(path)}")
    return 0


COMMANDS = {"dispatch": cmd_dispatch, "dispatch-table": cmd_dispatch_table, "sweep": cmd_sweep}
