"""The course's one command line: `python -m helpers COMMAND`, for learners, teachers and maintainers.

    python -m helpers info                     which backend runs, and the device card
    python -m helpers ladder [--size N]        every registered kernel: verified, and on a GPU timed
    python -m helpers ladder --mine [--size N] your saved kernels (my_kernels/), checked, beside the course's:
                                               each stage's lesson figure, and on a GPU the times
    python -m helpers check FILE.cu --kernel NAME --grid X,Y --block X,Y --mnk M,N,K
                                               run any kernel of the course signature once and verify it
                                               (--precision tf32: to TF32's accuracy, for tensor cores)
    python -m helpers trace FILE.cu --kernel NAME --grid X,Y --block X,Y --mnk M,N,K [--racecheck]
                                               its memory traffic per source line: bank conflicts,
                                               sectors (and races), traced on the CPU emulator
    python -m helpers tune VARIANT [--size N] [--out FILE] [--dry-run]
                                               search a kernel's tile configurations: each verified,
                                               then timed on a GPU (--dry-run: enumerate and verify only)
    python -m helpers diff VARIANT [--code-only]  the kernel's diff against the one it is built from
    python -m helpers resources [--arch sm_86]  every kernel's registers, shared memory, spills and occupancy
                                               on one GPU architecture (default: this GPU's), from ptxas
    python -m helpers results-table [--ladder FILE] [--write]
                                               docs/results.md's table from the newest committed ladder
                                               (--write: into docs/results.md, with figures/11_autotuning_*.svg)
    python -m helpers dispatch [--sizes 1000,4096x4096x512] [--precision tf32]
                                               which kernel the dispatcher (stage 11) chooses per shape, and why
    python -m helpers sweep [--sizes ...] [--held-out ...]
                                               GPU: sgemm as called, FP32 and TF32, beta 0 and 1, beside cuBLAS
                                               over many shapes, each verified first (results/sweep_*.json)
    python -m helpers teacher student-copies OUTDIR | teacher-copies OUTDIR | grade STUDENT.ipynb ...
                                               notebooks to hand out or keep, and a grader (helpers/teach)
    python -m helpers exercise list | starter ID | check ID FILE.cu | solution ID
                                               write a stage's kernel yourself, and have it checked
                                               (helpers/course/write_it; exit 0 iff the check passes)
Maintainers:
    python -m helpers dispatch-table           GPU: time every candidate per shape into results/dispatch_*.json
    python -m helpers figures [NAME ...] [--check] regenerate figures/*.svg (--check: which are stale)
    python -m helpers ncu launch|sass [VARIANT ...] | compare OUT
                                               Nsight Compute runs of every kernel (tools/ncu_run.sh) and
                                               their comparison with the emulator's trace
    python -m helpers notebooks refresh|check|strip NOTEBOOK ...
                                               keep notebooks in house form (outputs only on checked cells)
Add --backend cpu|gpu to any of them to choose the backend.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.cli.commands import (EXIT_FAILED, EXIT_USAGE, EXIT_WRONG, block_list_arg, ints_arg, whole_arg, cmd_check, cmd_diff, cmd_figures,
                                  cmd_info, cmd_ladder, cmd_ncu, cmd_results_table, cmd_trace, cmd_tune)
from helpers.cli.commands import cmd_resources
from helpers.cli import dispatch_cmds, exercise, notebooks, teacher
from helpers.core.arch import COURSE_ARCHS, arch_name
from helpers.core.errors import (CourseError, InputError, KernelArgumentError, KernelCompileError, LaunchConfigError,
                                 ResultsFileError, VerificationError)
from helpers.core.stages import variants
from helpers.measure import ncu
from helpers.run import backend
from helpers.views import figure_files

COMMANDS = {"info": cmd_info, "ladder": cmd_ladder, "check": cmd_check, "trace": cmd_trace, "tune": cmd_tune, "diff": cmd_diff,
            "results-table": cmd_results_table, "resources": cmd_resources, "figures": cmd_figures, "ncu": cmd_ncu,
            "notebooks": notebooks.main, "teacher": teacher.main, "exercise": exercise.main,
            **dispatch_cmds.COMMANDS}


def _arch_arg(text: str) -> str:
    try:
        return arch_name(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m helpers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", choices=("cpu", "gpu"), help="default: the GPU when CuPy sees one")
    sub.add_parser("info", parents=[common], help="the backend and device card")
    lad = sub.add_parser("ladder", parents=[common], help="verify (and on a GPU time) every registered kernel")
    lad.add_argument("--size", type=int, help="M = N = K for the timings (default 4096; with --mine 2048)")
    lad.add_argument("--repeat", type=int, default=50, help="timed launches per kernel (default 50)")
    lad.add_argument("--json", help="also write the table, with provenance, to this file")
    lad.add_argument("--mine", action="store_true",
                     help="your saved kernels of the write-it exercises (my_kernels/), checked, beside the course's "
                          "and cuBLAS (--size default 2048)")
    launch = argparse.ArgumentParser(add_help=False)  # one kernel of the course signature, once
    launch.add_argument("file", help="the .cu file")
    launch.add_argument("--kernel", required=True, help="the __global__ function's name")
    launch.add_argument("--template", help="template arguments, e.g. 128,128,8 for NAME<128,128,8>")
    launch.add_argument("--grid", required=True, type=lambda t: ints_arg(t, "--grid", (1, 2, 3)))
    launch.add_argument("--block", required=True, type=lambda t: ints_arg(t, "--block", (1, 2, 3)))
    launch.add_argument("--mnk", required=True, type=lambda t: ints_arg(t, "--mnk", (3,)))
    launch.add_argument("--shared-mem", type=int, default=0, help="dynamic shared memory in bytes")
    launch.add_argument("--alpha", type=float, default=1.25)
    launch.add_argument("--beta", type=float, default=-0.75)
    chk = sub.add_parser("check", parents=[common, launch], help="run one kernel of the course signature and verify it")
    chk.add_argument("--precision", choices=("fp32", "tf32"),
                     help="the accuracy to verify to: tf32 for a kernel on the tensor cores (default: the course's "
                          "kernel's in that file, else fp32)")
    trc = sub.add_parser("trace", parents=[common, launch],
                         help="memory traffic per source line (bank conflicts, sectors), from the CPU emulator")
    trc.add_argument("--blocks", type=block_list_arg,
                     help="linear indices of the blocks to trace, e.g. 0,5 (default: first, middle and last)")
    trc.add_argument("--racecheck", action="store_true",
                     help="also look for shared-memory races and reads of unwritten shared memory "
                          "(exit status 1 when any is found)")
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
    dif = sub.add_parser("diff", help="a kernel's diff against the kernel it is built from: the stage's lesson")
    dif.add_argument("variant", metavar="VARIANT", choices=[v.name for v in variants()],
                     help="a registered kernel, e.g. 07_vectorized")
    dif.add_argument("--context", type=lambda t: whole_arg(t, "--context", 0), default=2, help="lines of context (default 2)")
    dif.add_argument("--code-only", action="store_true", help="leave out comments and blank lines")
    res = sub.add_parser("resources", parents=[common],
                         help="registers, shared memory, spills and occupancy of every kernel on one architecture")
    res.add_argument("--arch", type=_arch_arg,
                     help=f"a GPU architecture: {', '.join(COURSE_ARCHS)} (default: this GPU's; on the emulator "
                          f"TBT_ARCH, else sm_90)")
    table = sub.add_parser("results-table", parents=[common], help="docs/results.md's table from the newest committed ladder")
    table.add_argument("--ladder", help="a ladder JSON (default: the newest results/gpu_*/ladder.json)")
    table.add_argument("--write", action="store_true",
                       help="put it into docs/results.md and redraw figures/11_autotuning_*.svg from the ladder")
    figs = sub.add_parser("figures", help="regenerate figures/*.svg (maintainers)")
    figs.add_argument("names", nargs="*", help=f"figures to make (default all: {', '.join(figure_files.FIGURES)})")
    figs.add_argument("--check", action="store_true", help="write nothing; exit 1 if a figure is missing or stale")
    nc = sub.add_parser("ncu", help="Nsight Compute: profile on a GPU, disassemble, compare with the emulator (maintainers)",
                        description=ncu.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    nsub = nc.add_subparsers(dest="ncu_command", required=True)
    for name, what in (("launch", "launch every registered configuration once (run under ncu)"),
                       ("sass", "print the SASS of every registered configuration")):
        one = nsub.add_parser(name, help=what)
        one.add_argument("variants", nargs="*", help="only these registered kernels (default: all)")
    cmp_ = nsub.add_parser("compare", help="compare a run's ncu.csv and SASS with the emulator's trace; JSON out")
    cmp_.add_argument("folder", type=Path, help="holds ncu.csv, ncu.log, provenance.json and sass.txt(.gz)")
    dispatch_cmds.add_parsers(sub, common)
    notebooks.add_parser(sub)
    teacher.add_parser(sub)
    exercise.add_parser(sub)
    return p


EXIT_INTERRUPTED = 130   # Ctrl-C, as a shell reports it


def main(argv=None) -> int:
    """Runs one command; its exit status (docs/command-line.md has the table): 0 done (a kernel correct), 1 a wrong
    result, 2 bad input (arguments, files, settings: nothing ran) or a compile error, 3 a kernel that failed while
    running, 130 interrupted."""
    args = parser().parse_args(argv)
    try:
        if getattr(args, "backend", None) and args.command not in ("teacher", "notebooks"):
            backend.use(args.backend)
        return COMMANDS[args.command](args)
    except (KernelCompileError, FileNotFoundError, InputError, ResultsFileError, LaunchConfigError,
            KernelArgumentError, backend.ArchSettingError, backend.BackendSettingError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except VerificationError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_WRONG
    except CourseError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED
    except UnicodeDecodeError as e:    # a file read somewhere is not text: bad input, said without a traceback
        print(f"error: a file this command read is not UTF-8 text (byte {e.start}: {e.reason}). Fix: give it a "
              f"text file saved as UTF-8.", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

