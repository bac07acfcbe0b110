"""`python -m helpers dispatch | dispatch-table | sweep`: the shape-aware dispatcher of stage 11."""

from __future__ import annotations

import argparse

from helpers.core import paths
from helpers.core.errors import CourseError
from helpers.measure import bench, dispatch_table
from helpers.run import backend, dispatch, gemm


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
    d.add_argument("--sizes", type=_shapes, default=dispatch_table.SWEEP_SHAPES,
                   help="N (a square) or MxNxK, comma-separated (default: the sweep's shapes)")
    t = sub.add_parser("dispatch-table", parents=[common],
                       help="GPU: time every candidate at the table's shapes; write results/dispatch_<gpu>_<date>.json")
    t.add_argument("--sizes", type=_shapes, default=dispatch_table.TABLE_SHAPES, help="the shapes to measure")
    t.add_argument("--repeat", type=int, default=30, help="timed launches per candidate (default 30)")
    t.add_argument("--out", help="write here instead of results/")
    s = sub.add_parser("sweep", parents=[common],
                       help="GPU: the dispatcher, the fixed best kernel and cuBLAS FP32 over many shapes; JSON and figure")
    s.add_argument("--sizes", type=_shapes, default=dispatch_table.SWEEP_SHAPES,
                   help="N (a square) or MxNxK, comma-separated (default: a list of squares, odd, K = 512, "
                        "tall-skinny and long-K shapes)")
    s.add_argument("--repeat", type=int, default=30, help="timed launches per kernel and round (default 30)")
    s.add_argument("--rounds", type=int, default=3, help="interleaved rounds per shape; the median is kept (default 3)")
    s.add_argument("--out", help="write here instead of results/sweep_<gpu>_<date>.json")


def cmd_dispatch(args) -> int:
    table = dispatch.current_table()
    where = (f"the {table.machine.name}'s table ({paths.rel(table.path)})" if backend.name() == "gpu"
             else f"the {table.machine.name}, from {paths.rel(table.path)} (this is the CPU emulator)")
    print(f"Choices for {where}:")
    for M, N, K in args.sizes:
        c = dispatch.choose(M, N, K, table)
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
    for M, N, K in args.sizes:
        bench.check_timing(M, N, K, args.repeat, min_repeat=10)
    data = dispatch_table.sweep(args.sizes, args.repeat, args.rounds)
    path = dispatch_table.write(data, "sweep", args.out)
    print(backend.banner())
    print(f"{'shape':>18} {'dispatcher':>11} {'cuBLAS':>8} {'%':>6} {'fixed %':>8}  choice")
    for r in data["rows"]:
        print(f"{r['M']}x{r['N']}x{r['K']:>6} {r['dispatcher_tflops']:>11.2f} {r['cublas_tflops']:>8.2f} "
              f"{r['pct_cublas']:>6.1f} {r['fixed_pct_cublas']:>8.1f}  {r['choice']} [{r['source']}]")
    s = data["summary"]
    print(f"geometric mean {s['geomean_pct_cublas']:.1f} % of cuBLAS (fixed kernel {s['fixed_geomean_pct_cublas']:.1f} %), "
          f"lowest {s['min_pct_cublas']:.1f} %")
    print(f"wrote {paths.rel(path)}")
    return 0


COMMANDS = {"dispatch": cmd_dispatch, "dispatch-table": cmd_dispatch_table, "sweep": cmd_sweep}
