"""Stage 01: SGEMM on one CPU core, from the triple loop to cache blocking.

Every version computes C = alpha * A @ B + beta * C in place, float32, row-major, on one core,
compiled by Numba (LLVM) with the same flags; each is the previous one plus one idea (versions.py).
Around them: the core's own ceilings (ceilings.py), timing against single-threaded OpenBLAS and
the benchmark (timing.py), the committed results (results.py), the figures (plots.py) and the
block-size panel (panel.py). The stage's exercise checkers are in helpers.course.exercises.

The notebook, the tests and tools/cpu_gemm_bench.py use the names re-exported here
(cpu_gemm.run, cpu_gemm.VERSIONS, ...). Code that patches one for a test must patch it in the
module that looks it up (e.g. helpers.course.cpu_gemm.panel.cache_sizes): these are copies.

vector_width is imported first, on purpose: it sets NUMBA_CPU_FEATURES (512-bit vectors on
AVX-512 cores) and only works before Numba compiles anything.
"""

from helpers.course.cpu_gemm import vector_width  # noqa: F401  (first: sets up LLVM before numba loads)

# isort: split

from helpers.course.cpu_gemm.versions import (BLOCK_LIMITS, FLAGS, VERSIONS, Version, as_version, cache_block,
                                              check, check_block_sizes, check_catalogue, operands, register_block,
                                              run, show_source, source_diff, version)
from helpers.course.cpu_gemm.ceilings import (FMA_ACCUMULATORS, VECTOR_REGISTERS, bandwidth_sizes, blas_info,
                                              cache_sizes, copy_bandwidth, cpu_model, fma_instructions,
                                              fma_latency_gflops, fma_peak, kib, machine, measure_ceilings,
                                              vector_bits)
from helpers.course.cpu_gemm.timing import Timing, benchmark, time_call, time_openblas, time_version
from helpers.course.cpu_gemm.results import (bar_verdict, best_blocked, load_results, results_files,
                                             results_label, results_table)
from helpers.course.cpu_gemm.plots import (LEVEL_COLORS, SVG_RC, VERSION_COLORS, draw_figures, plot_blocking,
                                           plot_results, plot_roofline)
from helpers.course.cpu_gemm.panel import (PANEL_CHOICES, PANEL_SHAPE, PANEL_SIZE, BlockResult, blocks_panel,
                                           describe_blocks, draw_blocks, run_blocks, working_sets)

__all__ = [
    # versions: the kernels' registry, running and checking them
    "BLOCK_LIMITS", "FLAGS", "VERSIONS", "Version", "as_version", "cache_block", "check", "check_block_sizes",
    "check_catalogue", "operands", "register_block", "run", "show_source", "source_diff", "version",
    # ceilings: this core's roofs and the machine a measurement ran on
    "FMA_ACCUMULATORS", "VECTOR_REGISTERS", "bandwidth_sizes", "blas_info", "cache_sizes", "copy_bandwidth",
    "cpu_model", "fma_instructions", "fma_latency_gflops", "fma_peak", "kib", "machine", "measure_ceilings",
    "vector_bits",
    # timing and the benchmark
    "Timing", "benchmark", "time_call", "time_openblas", "time_version",
    # committed results
    "bar_verdict", "best_blocked", "load_results", "results_files", "results_label", "results_table",
    # figures
    "LEVEL_COLORS", "SVG_RC", "VERSION_COLORS", "draw_figures", "plot_blocking", "plot_results", "plot_roofline",
    # the block-size panel
    "PANEL_CHOICES", "PANEL_SHAPE", "PANEL_SIZE", "BlockResult", "blocks_panel", "describe_blocks", "draw_blocks",
    "run_blocks", "working_sets",
]
