"""Command-line tools for learners and teachers.

    python -m helpers info                     which backend runs, and the device card
    python -m helpers ladder [--size N]        every registered kernel: verified, and on a GPU timed
    python -m helpers check FILE.cu --kernel NAME --grid X,Y --block X,Y --mnk M,N,K
                                               run any kernel of the course signature once and verify it
    python -m helpers trace FILE.cu --kernel NAME --grid X,Y --block X,Y --mnk M,N,K [--racecheck]
                                               its memory traffic per source line: bank conflicts,
                                               sectors (and races), traced on the CPU emulator
    python -m helpers tune VARIANT [--size N] [--out FILE] [--dry-run]
                                               search a kernel's tile configurations: each verified,
                                               then timed on a GPU (--dry-run: enumerate and verify only)
    python -m helpers results-table [--ladder FILE] [--write]
                                               README's results table from the newest committed ladder
                                               (--write: into README, with figures/11_autotuning_*.svg)
    python -m helpers teacher student-copies OUTDIR | teacher-copies OUTDIR | grade STUDENT.ipynb ...
                                               notebooks to hand out or keep, and a grader (helpers/teacher.py)
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
    from . import bench, progress, stages, verify
    on_gpu = backend.name() == "gpu"
    # Kernels this GPU cannot compile (wgmma before or after Hopper, wmma TF32 before Ampere)
    cc = backend.current().device_info().compute_capability if on_gpu else None
    skipped = {v.name: why for v in stages.variants() if cc and (why := v.unsupported_on(cc))}
    variants = tuple(v for v in stages.variants() if v.name not in skipped)
    rows = []
    for v in progress.bar(variants, desc="verifying on the shape catalogue", unit="kernel"):
        report = verify.check_catalogue(v)
        rows.append({"variant": v.name, "verified": report.ok, "summary": v.summary})
        if not report.ok:
            print(report, file=sys.stderr)
    if on_gpu:
        timed = {r["variant"]: r for r in bench.ladder(args.size, variants, n_repeat=args.repeat)}
        cublas = timed.pop("cublas_sgemm")
        cublas_tf32 = timed.pop("cublas_tf32", None)  # timed when a TF32 kernel is registered
        for r in rows:
            r.update({k: v for k, v in timed[r["variant"]].items() if k not in r})
    print(backend.banner())
    size = f"{args.size}x{args.size}x{args.size}"
    print("Verified on the shape catalogue; " + (f"timed at {size} (median of {args.repeat})." if on_gpu else
          "no timings: the CPU emulator's speed says nothing about a GPU (see results/ for GPU runs)."))
    header = f"{'kernel':<22} {'verified':<9}" + (f" {'ms':>9} {'TFLOP/s':>8} {'% cuBLAS':>9}" if on_gpu else "")
    print(header)
    if on_gpu:
        print(f"{'cuBLAS (TF32 off)':<22} {'-':<9} {cublas['median_ms']:>9.3f} {cublas['tflops']:>8.2f} {100.0:>9.1f}")
        if cublas_tf32:
            print(f"{'cuBLAS (TF32)':<22} {'-':<9} {cublas_tf32['median_ms']:>9.3f} {cublas_tf32['tflops']:>8.2f} "
                  f"{100.0:>9.1f}  (the % of a TF32 kernel is of this row)")
    for r in rows:
        line = f"{r['variant']:<22} {'yes' if r['verified'] else 'NO':<9}"
        if on_gpu:
            line += f" {r['median_ms']:>9.3f} {r['tflops']:>8.2f} {r['pct_cublas']:>9.1f}"
            if r.get("precision", "fp32") != "fp32":
                line += f"  {r['precision'].upper()}; {r['pct_cublas_fp32']:.1f}% of cuBLAS FP32"
        print(line)
    for name, why in skipped.items():
        print(f"{name:<22} skipped: {why}")
    if args.json:
        out = {"size": args.size, "backend": backend.name(), "rows": rows, **({"skipped": skipped} if skipped else {})}
        if on_gpu:
            out["cublas"] = cublas
            if cublas_tf32:
                out["cublas_tf32"] = cublas_tf32
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


def _block_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(x) for x in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--blocks takes block indices separated by commas, got {text!r}")
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"--blocks takes block indices from 0 up, got {text!r}")
    return values


def _code(text: str, width: int = 72) -> str:
    """A source line without its trailing comment, cut to `width` characters."""
    code = text.split("//", 1)[0].strip() or text.strip()
    return code if len(code) <= width else code[:width - 3] + "..."


def _cell(value, fmt: str = "{:.0f}") -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else fmt.format(value)


def trace_table(t) -> str:
    """The per-line table of a trace: one row per source line and kind of access."""
    from .memory import per_line
    df = per_line(t)
    if df.empty:
        return "No shared or global memory accesses in the traced blocks."
    header = ["line", "access", "requests", "sectors/req", "ideal", "ways", "wavefronts", "wf/req", "ideal",
              "vs ideal", "source"]
    rows, previous = [], None
    for r in df.to_dict("records"):
        n = r["requests"]
        access = f"{r['space']} {r['op']} {r['array']}" + (f" ({r['bytes per lane']} B)" if r["bytes per lane"] != 4 else "")
        if r["space"] == "global":
            got, ideal = r["sectors"] / n, r["ideal sectors"] / n
            cells = [_cell(got, "{:.1f}"), _cell(ideal, "{:.1f}"), "-", "-", "-", "-"]
        else:
            got, ideal = r["wavefronts"] / n, r["ideal wavefronts"] / n
            cells = ["-", "-", _cell(r["max ways"]), _cell(r["wavefronts"]), _cell(got, "{:.1f}"), _cell(ideal, "{:.1f}")]
        ratio = f"{got / ideal:.1f}x" if ideal else "-"
        first = r["line"] != previous
        rows.append([str(r["line"]) if first else "", access, str(n), *cells, ratio,
                     _code(t.line_text(int(r["line"]))) if first else ""])
        previous = r["line"]
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    left = {1, 10}  # access and source read left-aligned
    def fmt(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([fmt(header)] + [fmt(row) for row in rows])


TRACE_LEGEND = """\
requests: warp-wide memory instructions (the lanes of one warp executing one access).
Global: sectors/req = 32-byte sectors each request touches; ideal = the fewest its bytes fit in.
Shared: ways = the worst bank conflict (1: none); wavefronts = passes through the 32 banks, in all
and per request; ideal = 1 for 4-byte, 2 for 8-byte and 4 for 16-byte accesses.
vs ideal: the cost per request over the ideal (1.0x: as good as the access width allows)."""


def cmd_trace(args) -> int:
    from . import memory, trace, verify
    from .gemm import launch_args
    from .kernels import _dims
    M, N, K = args.mnk
    name = args.kernel + (f"<{args.template}>" if args.template else "")
    grid, block = _dims(args.grid, "grid"), _dims(args.block, "block")
    nblocks = grid[0] * grid[1] * grid[2]
    if args.blocks and args.blocks[-1] >= nblocks:
        print(f"error: --blocks: block {args.blocks[-1]} is outside the grid {grid}, whose {nblocks} blocks "
              f"are numbered 0 to {nblocks - 1} (x fastest, then y, then z).", file=sys.stderr)
        return EXIT_USAGE
    s = verify.Shape("trace", M, N, K, alpha=args.alpha, beta=args.beta)
    A, B, C = verify.random_operands(s, np.random.default_rng())
    t = trace.capture(args.file, name, grid, block, launch_args(M, N, K, s.alpha, A, B, s.beta, C),
                      args.blocks, args.shared_mem)
    shown = lambda dims: "(" + ",".join(map(str, dims)) + ")"
    print(f"{name} from {t.source.display_path}, grid {shown(grid)}, block {shown(block)}, M,N,K = {M},{N},{K}:")
    print(f"traced block{'s' if len(t.blocks) > 1 else ''} {', '.join(map(str, t.blocks))} of {nblocks} on the CPU "
          f"emulator ({t.records.size} accesses; the addresses are the kernel's own, as on a GPU).")
    if t.dropped:
        print(f"warning: the trace kept {t.records.size} accesses and dropped {t.dropped}: the counts below are "
              f"incomplete. Trace a smaller problem (--mnk) or fewer blocks (--blocks).")
    print()
    print(trace_table(t))
    print()
    print(TRACE_LEGEND)
    if not args.racecheck:
        return 0
    races, unwritten = memory.races(t), memory.unwritten_reads(t)
    print()
    print("Racecheck of the traced blocks (shared memory):")
    for r in races:
        print(f"  race: {r}")
        for line in sorted({r.first[1], r.second[1]}):
            print(f"    {line:>4} | {t.line_text(line)}")
    by_line: dict[int, list] = {}
    for u in unwritten:
        by_line.setdefault(u.line, []).append(u)
    for line, found in sorted(by_line.items()):
        u, more = found[0], len(found) - 1
        print(f"  unwritten read: block {u.block}: thread {u.thread} loads {u.array} (shared word {u.word}) at "
              f"line {line} before any thread of the block wrote it"
              + (f" (and {more} more word{'s' if more > 1 else ''} there)" if more else ""))
        print(f"    {line:>4} | {t.line_text(line)}")
    if not races and not unwritten:
        print("  no races and no reads of unwritten shared memory.")
        return 0
    print(f"{len(races)} race(s) and {len(by_line)} line(s) reading unwritten shared memory.")
    return EXIT_WRONG


def cmd_tune(args) -> int:
    from . import autotune
    if args.dry_run:
        print(autotune.search_space(args.variant, args.radius).summary())
        print()
        result = autotune.dry_run(args.variant, count=args.count, radius=args.radius)
        print(f"{backend.banner()}\nThe first {len(result.rows)} candidates, verified on the catalogue's small "
              f"shapes; nothing timed:")
        print(result.table())
        return 0 if all(r["status"] == autotune.VERIFIED for r in result.rows) else EXIT_WRONG
    result = autotune.tune(args.variant, size=args.size, radius=args.radius, repeat=args.repeat)
    print(backend.banner())
    print(result.table())
    print(f"cached in {result.file}")
    if args.out:
        print(f"wrote {autotune.record(result, args.out)}")
    return 0 if result.best else EXIT_WRONG


def cmd_results_table(args) -> int:
    from . import ladder_report
    ladder = ladder_report.load_ladder(args.ladder)
    print(ladder_report.results_table(ladder))
    if args.write:
        for path in ladder_report.regenerate(ladder):
            print(f"wrote {path.relative_to(ladder_report.ROOT) if path.is_relative_to(ladder_report.ROOT) else path}")
    return 0


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
    launch = argparse.ArgumentParser(add_help=False)  # one kernel of the course signature, once
    launch.add_argument("file", help="the .cu file")
    launch.add_argument("--kernel", required=True, help="the __global__ function's name")
    launch.add_argument("--template", help="template arguments, e.g. 128,128,8 for NAME<128,128,8>")
    launch.add_argument("--grid", required=True, type=lambda t: _ints(t, "--grid", (1, 2, 3)))
    launch.add_argument("--block", required=True, type=lambda t: _ints(t, "--block", (1, 2, 3)))
    launch.add_argument("--mnk", required=True, type=lambda t: _ints(t, "--mnk", (3,)))
    launch.add_argument("--shared-mem", type=int, default=0, help="dynamic shared memory in bytes")
    launch.add_argument("--alpha", type=float, default=1.25)
    launch.add_argument("--beta", type=float, default=-0.75)
    sub.add_parser("check", parents=[common, launch], help="run one kernel of the course signature and verify it")
    trc = sub.add_parser("trace", parents=[common, launch],
                         help="memory traffic per source line (bank conflicts, sectors), from the CPU emulator")
    trc.add_argument("--blocks", type=_block_list,
                     help="linear indices of the blocks to trace, e.g. 0,5 (default: first, middle and last)")
    trc.add_argument("--racecheck", action="store_true",
                     help="also look for shared-memory races and reads of unwritten shared memory "
                          "(exit status 1 when any is found)")
    from .stages import variants
    tune = sub.add_parser("tune", parents=[common], help="search a kernel's tile configurations (timed on a GPU)")
    tune.add_argument("variant", metavar="VARIANT", choices=[v.name for v in variants()],
                      help="a registered kernel, e.g. 08_warp_tiling")
    tune.add_argument("--size", type=int, default=4096, help="M = N = K for the timings (default 4096)")
    tune.add_argument("--radius", type=int, default=2,
                      help="steps from the registered default the search goes (default 2)")
    tune.add_argument("--repeat", type=int, default=30, help="timed launches per candidate (default 30)")
    tune.add_argument("--out", help="also write the search, with provenance, to this results file")
    tune.add_argument("--dry-run", action="store_true",
                      help="any backend: show the search space and verify the first --count candidates, untimed")
    tune.add_argument("--count", type=int, default=3, help="candidates a dry run verifies (default 3)")
    table = sub.add_parser("results-table", parents=[common], help="README's results table from the newest committed ladder")
    table.add_argument("--ladder", help="a ladder JSON (default: the newest results/gpu_*/ladder.json)")
    table.add_argument("--write", action="store_true",
                       help="put it into README.md and redraw figures/11_autotuning_*.svg from the ladder")
    from . import teacher
    teacher.add_parser(sub)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "teacher":
            from . import teacher
            return teacher.main(args)
        if args.backend:
            backend.use(args.backend)
        return {"info": cmd_info, "ladder": cmd_ladder, "check": cmd_check, "trace": cmd_trace,
                "tune": cmd_tune, "results-table": cmd_results_table}[args.command](args)
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
