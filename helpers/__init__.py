"""Tile by Tile's Python package, in layers that import only downward (docs/maintaining.md: "How the code is laid out"):

    core      the course's facts: errors, paths, the stage registry, configurations, architectures
    emulator  the CPU emulator: every CUDA thread a fiber, every access traced and bounds-checked
    run       backends (GPU through CuPy, or the emulator), compiling and launching a kernel
    measure   the instruments: verify, time, trace, accesses, resources, models, autotuning (no drawing)
    views     what a learner sees: tables, figures, slider panels, the ladder
    course    the learner's course: exercises, the kernels learners write (write_it), stage 01's CPU GEMM, Colab
    teach     the teacher kit, beside maintain: student and teacher copies, the grader and its sandbox
    maintain  notebook upkeep, beside teach: the house form, answers off the screen, glossary links
    cli       the one command line, `python -m helpers`

Notebooks import the modules they use by their short name, `from helpers import stages, verify, figures`;
SURFACE below is that list, each resolved to its layer on first use (importing `helpers` loads nothing).
"""

from __future__ import annotations

import importlib

SURFACE = {
    # core: what the course is made of
    "stages": "helpers.core.stages",            # the registry: stages and their kernel variants
    "configs": "helpers.core.configs",          # one frozen dataclass of tile sizes per kernel family
    "arch": "helpers.core.arch",                # per-architecture limits and the occupancy calculator
    "paths": "helpers.core.paths",              # where kernels/, notebooks/, results/, figures/ are
    "markdown": "helpers.core.markdown",        # text that renders as Markdown in Jupyter
    # run: a kernel on the backend in use
    "backend": "helpers.run.backend",           # which backend runs (GPU or the CPU emulator) and its device card
    "gemm": "helpers.run.gemm",                 # launch a kernel as C = alpha A B + beta C
    "dispatch": "helpers.run.dispatch",         # which kernel and configuration for a shape (table, wave model)
    "dispatch_tf32": "helpers.run.dispatch_tf32",  # which kernel in TF32 (stream-K on Hopper), by a wave model
    "tensor_maps": "helpers.run.tensor_maps",   # TMA tensor maps of A and B (stage 12), checked as the driver does
    # measure: the instruments
    "verify": "helpers.measure.verify",         # correctness against float64 on the shape catalogue
    "bench": "helpers.measure.bench",           # timing beside cuBLAS (GPU)
    "trace": "helpers.measure.trace",           # memory traces from the emulator
    "memory": "helpers.measure.memory",         # warp requests, sectors, banks from a trace
    "accesses": "helpers.measure.accesses",     # per-warp, per-line and per-element views of a kernel's trace
    "resources": "helpers.measure.resources",   # registers, shared memory, spills, occupancy (ptxas or the GPU)
    "intensity": "helpers.measure.intensity",   # FLOPs per byte models
    "roofline": "helpers.measure.roofline",     # ceilings and points (measured or committed)
    "pipeline": "helpers.measure.pipeline",     # what overlaps what in a double-buffered kernel's trace
    "tensor_cores": "helpers.measure.tensor_cores",  # fragment layouts and stage 10's committed runs
    "ncu": "helpers.measure.ncu",               # Nsight Compute runs, committed and compared with the trace
    "tuning_space": "helpers.measure.tuning_space",  # which configurations a search tries, and why not the others
    "autotune": "helpers.measure.autotune",     # searching tile configurations: verify, time, cache, commit
    "dispatch_table": "helpers.measure.dispatch_table",  # the dispatcher's table and sweep (timed on a GPU), read back
    "library_sweep": "helpers.measure.library_sweep",  # sgemm as called beside cuBLAS, FP32 and TF32 (`helpers sweep`)
    "stream_k": "helpers.measure.stream_k",     # stream-K's schedule per block, and each block's work from its trace
    "gpu_results": "helpers.measure.gpu_results",  # timing now on a GPU, or the committed measurements
    "hopper": "helpers.measure.hopper",         # stage 12's pipeline from its trace, and its committed H200 runs
    "steps": "helpers.measure.steps",           # a stage's one-idea steps as measured on a GPU (tools/measure_steps.py)
    # views: what a learner sees
    "display": "helpers.views.display",         # device card, stage map, kernel source and diffs, throughput
    "figures": "helpers.views.figures",         # banks, sectors, reuse and throughput drawn
    "roofline_plot": "helpers.views.roofline_plot",
    "pipeline_plots": "helpers.views.pipeline_plots",          # stage 09's load/compute schedules
    "tensor_core_plots": "helpers.views.tensor_core_plots",    # stage 10's fragments, swizzle, wgmma sweep
    "autotune_plots": "helpers.views.autotune_plots",
    "dispatch_plots": "helpers.views.dispatch_plots",  # waves, the wave model, the sweep against cuBLAS
    "hopper_plots": "helpers.views.hopper_plots",  # stage 12's pipeline timeline, steps and sweep
    "ladder_report": "helpers.views.ladder_report",  # the capstone ladder: chart, roofline, steps, docs/results.md's table
    "widgets": "helpers.views.widgets",         # slider panels
    # course
    "exercises": "helpers.course.exercises",    # the exercises' checkers, per stage
    "cpu_gemm": "helpers.course.cpu_gemm",      # stage 01: the CPU GEMM
    "colab": "helpers.course.colab",            # the first cell of every notebook; Colab setup
    "write_it": "helpers.course.write_it",      # write the stage's kernel yourself: %%kernel cells and their checks
}

# Functions of the surface: `from helpers import sgemm` gives the function, not its module.
FUNCTIONS = {
    "sgemm": "helpers.run.sgemm",               # alpha A B + beta C, a kernel chosen per shape, FP32 or TF32 (stage 11)
}

__all__ = sorted([*SURFACE, *FUNCTIONS])


def __getattr__(name: str):
    if name in SURFACE:
        module = importlib.import_module(SURFACE[name])
        globals()[name] = module
        return module
    if name in FUNCTIONS:
        function = getattr(importlib.import_module(FUNCTIONS[name]), name)
        globals()[name] = function
        return function
    raise AttributeError(f"module 'helpers' has no attribute {name!r}; the notebook surface is "
                         f"{', '.join(__all__)} (or import a module by its layer, e.g. helpers.measure.verify)")


def __dir__():
    return __all__
