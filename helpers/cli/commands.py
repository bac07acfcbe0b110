"""The learner's commands: info, ladder, check, trace, tune, results-table (see helpers.cli)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib
import numpy as np

from helpers.measure import tuning_space
from helpers.core import paths
from helpers.views import display
from helpers.measure import ncu
from helpers.views import figure_files
from helpers.run import backend
from helpers.measure import bench
from helpers.core import progress
from helpers.core import stages
from helpers.measure import verify
from helpers.run.gemm import launch_args
from helpers.run.kernel_loader import load_kernel
from helpers.measure.memory import per_line
from helpers.measure import memory
from helpers.measure import trace
from helpers.run.kernel_loader import check_launch
from helpers.core.errors import InputError
from helpers.measure import autotune
from helpers.measure import resources
from helpers.views import ladder_report
from helpers.course import write_it



EXIT_WRONG, EXIT_USAGE, EXIT_FAILED = 1, 2, 3


def ints_arg(text: str, what: str, count: tuple[int, ...]) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} takes whole numbers separated by commas, got {text!r}")
    if len(values) not in count:
        raise argparse.ArgumentTypeError(f"{what} takes {' or '.join(map(str, count))} numbers, got {text!r}")
    return values


def whole_arg(text: str, what: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} takes a whole number, got {text!r}")
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{what} takes a whole number from {minimum} up, got {value}")
    return value


# ---- inputs: checked before anything compiles or allocates, by the checks the Python API uses ---------
def _out_file(path, option: str) -> None:
    """A file a command writes when it is done: its folder must exist now, not after the run."""
    if path and not Path(path).resolve().parent.is_dir():
        raise InputError(f"{option} {path}: the folder {Path(path).resolve().parent} does not exist, and the file "
                         f"would be written only at the end of the run. Fix: create the folder, or name a file in one.")


def _launch_inputs(args, reference: bool) -> tuple:
    """check and trace: M, N, K, alpha and beta and the memory they need (verify.check_inputs), and
    the grid, block and dynamic shared memory a GPU would take (kernel_loader.check_launch)."""
    M, N, K = args.mnk
    s = verify.Shape("check" if reference else "trace", M, N, K, alpha=args.alpha, beta=args.beta)
    verify.check_inputs(s, reference, "verifying it" if reference else "tracing it")
    grid, block = check_launch(args.grid, args.block, args.shared_mem, 0, *backend.max_shared_per_block())
    return s, grid, block


def cmd_info(args) -> int:
    print(backend.banner())
    print(backend.current().device_info().card())
    return 0


def cmd_ladder(args) -> int:
    if args.mine:
        return _my_ladder(args)
    args.size = 4096 if args.size is None else args.size
    bench.check_timing(args.size, args.size, args.size, args.repeat)
    _out_file(args.json, "--json")
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


def _my_ladder(args) -> int:
    """The learner's ladder (helpers.course.write_it.ladder): exit 0 when every saved kernel passes."""
    size = write_it.TIME_SIZE if args.size is None else args.size
    bench.check_timing(size, size, size, args.repeat)   # a bad size is named on any backend
    _out_file(args.json, "--json")
    mine = write_it.ladder(size)
    print(mine.text())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(mine.as_dict(), f, indent=1)
    return 0 if all(r.status in ("passed", "not saved") for r in mine.rungs) else EXIT_WRONG


def cmd_check(args) -> int:
    M, N, K = args.mnk
    s, _, _ = _launch_inputs(args, reference=True)
    name = args.kernel + (f"<{args.template}>" if args.template else "")
    kernel = load_kernel(args.file, name)
    A, B, C0 = verify.random_operands(s, np.random.default_rng())
    bk = backend.current()
    dC = bk.to_device(C0)
    kernel(args.grid, args.block, launch_args(M, N, K, s.alpha, bk.to_device(A), bk.to_device(B), s.beta, dC),
           shared_mem=args.shared_mem)
    precision = args.precision or _registered_precision(args.file)
    ref, tol = verify.reference(A, B, C0, s.alpha, s.beta, precision)
    result = verify.compare(bk.to_host(dC), C0, ref, tol, s)
    print(f"{name} from {args.file}, grid {args.grid}, block {args.block}, backend {backend.name()}, "
          f"verified to {precision.upper()}'s accuracy:")
    print(result.details().replace("check", "random data", 1))
    if not result.ok and precision == "fp32":
        ref, tol = verify.reference(A, B, C0, s.alpha, s.beta, "tf32")
        if verify.compare(bk.to_host(dC), C0, ref, tol, s).ok:
            print("The result is right to TF32's accuracy: if the kernel multiplies on the tensor cores (wmma, "
                  "mma.sync, wgmma), run again with --precision tf32.")
    return 0 if result.ok else EXIT_WRONG


def _registered_precision(file) -> str:
    """The precision of the course's kernel in `file` (TF32 for stage 10's), FP32 for any other file."""
    path = Path(file).resolve()
    return next((v.precision for v in stages.variants() if v.path.resolve() == path), "fp32")


def block_list_arg(text: str) -> tuple[int, ...]:
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
    M, N, K = args.mnk
    s, grid, block = _launch_inputs(args, reference=False)
    name = args.kernel + (f"<{args.template}>" if args.template else "")
    nblocks = grid[0] * grid[1] * grid[2]
    if args.blocks and args.blocks[-1] >= nblocks:
        print(f"error: --blocks: block {args.blocks[-1]} is outside the grid {grid}, whose {nblocks} blocks "
              f"are numbered 0 to {nblocks - 1} (x fastest, then y, then z).", file=sys.stderr)
        return EXIT_USAGE
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
    bench.check_timing(args.size, args.size, args.size, args.repeat, min_repeat=10)
    _out_file(args.out, "--out")
    if args.dry_run:
        print(tuning_space.search_space(args.variant, args.radius).summary())
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
    ladder = ladder_report.load_ladder(args.ladder)
    print(ladder_report.results_table(ladder))
    if args.write:
        for path in ladder_report.regenerate(ladder):
            print(f"wrote {paths.rel(path)}")
    return 0


def cmd_figures(args) -> int:
    matplotlib.use("Agg")
    if args.check:
        bad = figure_files.stale(args.names)
        for n in bad:
            print(f"stale or missing: {paths.rel(figure_files.figure_path(n))}")
        print("all figures up to date" if not bad else "run `python -m helpers figures` to regenerate")
        return 1 if bad else 0
    for path in figure_files.generate(args.names):
        print(f"wrote {paths.rel(path)}")
    return 0


def cmd_ncu(args) -> int:
    if args.ncu_command == "launch":
        ncu.launch_all(tuple(args.variants))
    elif args.ncu_command == "sass":
        print(ncu.disassemble(only=tuple(args.variants)))
    else:
        folder = args.folder
        result = ncu.compare((folder / "ncu.csv").read_text(), ncu.read_sass(folder), (folder / "ncu.log").read_text())
        result["provenance"] = json.loads((folder / "provenance.json").read_text())
        json.dump(result, sys.stdout, indent=1)
        print()
    return 0


def cmd_diff(args) -> int:
    v = stages.resolve(args.variant)
    print(display.diff_text(v.parent, v.name, context=args.context, code_only=args.code_only) if v.parent
          else f"{v.name} is the course's first kernel: it is built from no other.")
    return 0


def cmd_resources(args) -> int:
    """Every registered kernel at its default configuration for one architecture: registers, shared
    memory, spills, blocks per SM and occupancy, from NVRTC + ptxas (no GPU needed)."""
    print(resources.resource_table(args.arch))
    return 0
