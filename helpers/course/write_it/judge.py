"""The check of an exercise, on the backend in use, stopping at the first failure:

    contract  the kernel's name and signature (extern "C", the course's eight parameters)
    compiles  NVRTC compiles it (the CPU emulator asks NVRTC first, then builds it): its message, at your line
    correct   every shape of the stage's catalogue, fresh random data, float64 reference, C poisoned with NaN
              where beta = 0 (helpers.measure.verify); a wrong result that no race explains blames the edges
              only if the kernel passes a shape that is a multiple of every tile (Exercise.aligned_shape)
    safe      no out-of-bounds access, divergent barrier or crash (the emulator stops them with thread and
              line) and, in a trace of the first, a middle and the last block, no race and no read of
              unwritten shared memory (helpers.measure.memory)
    lesson    the stage's lesson measured from the trace of your kernel (helpers.course.write_it.lessons)
    timing    on a GPU: your kernel, the course's and cuBLAS at 2048³ (helpers.measure.bench); each of your
              launches on fresh inputs and checked, the time held to the speed of light (measure/fair_timing.py)

The emulator stops an out-of-bounds access while "correct" runs the shapes, and a wrong result is traced
for a race first: either fails "safe", but the report keeps the order above, "correct" first (not
finished, or the wrong result), then "safe" with the cause.

A pass reports what each step measured. A source that still holds TODO blocks and fails is "not done
yet", not an error: a notebook's starter cell runs clean.
"""

from __future__ import annotations

import numpy as np

from helpers.core import stages
from helpers.core.errors import CourseError, KernelCompileError, KernelRuntimeError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource
from helpers.course.write_it import barriers, diagnose
from helpers.course.write_it.exercise import Exercise
from helpers.course.write_it.registry import exercise as find
from helpers.course.write_it.verdict import Verdict
from helpers.measure import bench, fair_timing, memory, trace, verify
from helpers.run import backend
from helpers.run.gemm import launch_args
from helpers.run.kernel_loader import Kernel, load_kernel

TIME_SIZE = 2048      # M = N = K of the GPU timing
TIME_REPEAT = 20


def judge(exercise_id, path, where: str | None = None, time_size: int = TIME_SIZE, seed: int | None = None) -> Verdict:
    """Checks the kernel in the .cu file `path` against exercise `exercise_id` on the backend in use.
    `where` names the source in messages ("your cell"; default: the file's path)."""
    ex = find(exercise_id)
    source = KernelSource.read(path)
    v = Verdict(ex.id, ex.kernel, where or source.display_path, _backend_words(),
                todo_lines=diagnose.todo_lines(source.text))
    problem = diagnose.signature_problem(ex, source.text)
    if problem:
        line, cause, hint = problem
        return v.fail("contract", cause, hint, line, source.line(line) if line else "")
    v.passed("contract", ex.signature())
    kernel = _compile(ex, source, v)
    if kernel is None:
        return v
    rng = np.random.default_rng(seed)
    if not _correct(ex, source, kernel, v, rng) or not _safe(ex, source, v, rng) or not _lesson(ex, source, v, rng):
        return v
    _timing(ex, kernel, v, time_size)
    return v


def _backend_words() -> str:
    if backend.name() == "gpu":
        return f"GPU ({backend.current().device_info().name})"
    return "CPU emulator"


def _compile(ex: Exercise, source: KernelSource, v: Verdict) -> Kernel | None:
    try:
        kernel = load_kernel(source.path, ex.kernel)
    except (KernelCompileError, UnsupportedFeatureError) as e:
        line, words = diagnose.first_compile_error(str(e), source.path)
        hint = diagnose.compile_hint(words) if isinstance(e, KernelCompileError) else str(e).splitlines()[-1]
        v.fail("compiles", words if line else str(e).strip().splitlines()[0], hint, line,
               source.line(line) if line else "", () if line else tuple(str(e).strip().splitlines()[1:8]))
        return None
    except CourseError as e:   # no NVRTC or no C++ compiler: the course's setup, not the kernel
        v.fail("compiles", str(e).splitlines()[0], "see the message: the course's setup (00_setup.ipynb) checks "
                                                    "the compilers.")
        return None
    v.passed("compiles", "NVRTC compiled it for a GPU" + (" and the emulator built it" if backend.name() == "cpu"
                                                           else ""))
    return kernel


def _operands(s: verify.Shape, rng):
    verify.check_inputs(s)
    return verify.random_operands(s, rng)


def _run(ex: Exercise, kernel: Kernel, s: verify.Shape, A, B, C0) -> np.ndarray:
    bk = backend.current()
    dC = bk.to_device(C0)
    kernel(ex.launch.grid(s.M, s.N, s.K), ex.launch.block,
           launch_args(s.M, s.N, s.K, s.alpha, bk.to_device(A), bk.to_device(B), s.beta, dC))
    return bk.to_host(dC)


def _runtime_failure(v: Verdict, source: KernelSource, e: KernelRuntimeError, during: str) -> bool:
    line, cause, fix = diagnose.runtime_error(str(e), source.path, source.text)
    v.fail("safe", f"{type(e).__name__} {during}: {cause}", fix or "see the message above.", line,
           source.line(line) if line else "")
    return False


def _correct(ex: Exercise, source: KernelSource, kernel: Kernel, v: Verdict, rng) -> bool:
    done: list[verify.Check] = []
    for s in ex.shapes:
        A, B, C0 = _operands(s, rng)
        try:
            C = _run(ex, kernel, s, A, B, C0)
        except KernelRuntimeError as e:
            v.skipped("correct", f"not finished: the emulator stopped the kernel on {diagnose.shape_words(s)} "
                                 f"(see safe, below)" + (f"; the {len(done)} shape{'s' * (len(done) > 1)} before it "
                                 f"passed" if done else ""))
            return _runtime_failure(v, source, e, f"on {diagnose.shape_words(s)}")
        ref, tol = verify.reference(A, B, C0, s.alpha, s.beta, ex.precision)
        result = verify.compare(C, C0, ref, tol, s, worst=3)
        if not result.ok:
            return _wrong(ex, source, kernel, v, result, done, rng)
        done.append(result)
    worst = max(done, key=lambda c: c.worst_ratio)
    v.numbers["worst error / tolerance"] = worst.worst_ratio
    poisoned = [c.shape.dims for c in done if c.shape.beta == 0]
    v.passed("correct", f"all {len(done)} shapes of the catalogue ({', '.join(c.shape.dims for c in done)}), fresh "
                        f"random data against float64" + (f"; C full of NaN with beta = 0 on {', '.join(poisoned)}"
                                                          if poisoned else ""),
             f"largest error {worst.worst_ratio:.2f} of the tolerance (on {diagnose.shape_words(worst.shape)})")
    return True


def _wrong(ex: Exercise, source: KernelSource, kernel: Kernel, v: Verdict, result: verify.Check, done: list,
           rng) -> bool:
    """A wrong result: a race or a read of unwritten shared memory is the likelier cause, so look first; else
    the hint, which may run the kernel on a shape that is a multiple of the tile (are only the edges wrong?)."""
    details = tuple(line.strip() for line in result.details().splitlines()[1:])
    cause = (f"wrong result on {diagnose.shape_words(result.shape)}: {result.wrong} of "
             f"{result.shape.M * result.shape.N} elements wrong"
             + (f", {result.nan} NaN" if result.nan else "")
             + (f", {result.unwritten} never written" if result.unwritten else ""))
    if _races(ex, source, v, rng, also="the likelier cause of the wrong result above",
              first=lambda: v.failed_before("correct", cause, *details)):
        return False
    aligned = ex.aligned_shape()

    def run_aligned() -> verify.Check:
        A, B, C0 = _operands(aligned, rng)
        C = _run(ex, kernel, aligned, A, B, C0)
        return verify.compare(C, C0, *verify.reference(A, B, C0, aligned.alpha, aligned.beta, ex.precision), aligned)

    try:
        hint = diagnose.wrong_hint(result, done, ex, run_aligned)
    except KernelRuntimeError as e:   # stopped on the aligned shape: that is the likelier cause
        v.failed_before("correct", cause, *details)
        return _runtime_failure(v, source, e, f"on {aligned.dims} (a multiple of the tile, run to see whether only "
                                              f"the edges are wrong)")
    v.fail("correct", cause, hint, details=details)
    return False


def _trace(ex: Exercise, source: KernelSource, size: tuple[int, int, int], blocks, rng) -> trace.Trace:
    s = verify.Shape("trace", *size)
    A, B, C = _operands(s, rng)
    return trace.capture(source.path, ex.kernel, ex.launch.grid(*size), ex.launch.block,
                         launch_args(*size, s.alpha, A, B, s.beta, C), blocks)


def _races(ex: Exercise, source: KernelSource, v: Verdict, rng, also: str = "", first=lambda: None) -> bool:
    """Fails the check and returns True where the trace finds a race or an unwritten read (after calling
    `first`, which reports what made the check look)."""
    try:
        t = _trace(ex, source, ex.race_size, None, rng)
    except KernelRuntimeError as e:
        first()
        return not _runtime_failure(v, source, e, "while tracing")
    races, unwritten = memory.races(t), memory.unwritten_reads(t)
    v.numbers.update({"races": len(races), "unwritten reads": len(unwritten), "traced blocks": t.blocks})
    tail = f" ({also})" if also else ""
    if races or unwritten:
        first()
    if races:
        r = races[0]
        (t1, l1, _), (t2, l2, op2) = r.first, r.second
        one_warp = barriers.races_within_warps(t)
        lanes = ", a lane of the same warp," if one_warp else ""
        # the trace knows the two accesses fell between the same two barriers, not which came first
        v.fail("safe", f"race on {r.array}: thread {t1} writes it at line {l1} and thread {t2}{lanes} {op2}s it at "
                       f"line {l2}, both after barrier {r.epoch} of block {r.block} and before the next one, so "
                       f"nothing orders them{tail}",
               diagnose.race_hint(races, one_warp, source.line), l2, source.line(l2),
               tuple(str(x) for x in races[1:3]))
        return True
    if unwritten:
        u = unwritten[0]
        v.fail("safe", f"thread {u.thread} of block {u.block} reads {u.array} (shared word {u.word}) at line {u.line} "
                       f"before any thread wrote it{tail}",
               f"every element of a shared tile must be written (zeros outside the matrices) and a __syncthreads() "
               f"must come between the writes and the reads; or the index of this read of {u.array} runs past the "
               f"part of it that the stores fill (compare it with the stores' index).", u.line, source.line(u.line))
        return True
    v.numbers["race trace"] = f"blocks {', '.join(map(str, t.blocks))} of {'x'.join(map(str, ex.race_size))}"
    return False


def _safe(ex: Exercise, source: KernelSource, v: Verdict, rng) -> bool:
    if _races(ex, source, v, rng):
        return False
    M, N, K = ex.race_size
    blocks = ", ".join(map(str, v.numbers["traced blocks"]))
    v.passed("safe", "no out-of-bounds access, divergent barrier or crash on any shape",
             f"no race and no read of unwritten shared memory in blocks {blocks} of a {M} × {N} × {K} launch")
    return True


def _lesson(ex: Exercise, source: KernelSource, v: Verdict, rng) -> bool:
    M, N, K = ex.lesson_size
    try:
        t = _trace(ex, source, ex.lesson_size, (0,), rng)
    except KernelRuntimeError as e:
        return _runtime_failure(v, source, e, "while tracing")
    lesson = ex.lesson(t, M, N, K)
    v.numbers.update(lesson.numbers)
    if not lesson.ok:
        v.fail("lesson", lesson.cause, lesson.hint, lesson.line, source.line(lesson.line) if lesson.line else "",
               lesson.measured)
        return False
    v.passed("lesson", f"{ex.lesson_text}:", *lesson.measured)
    return True


def _timing(ex: Exercise, kernel: Kernel, v: Verdict, size: int) -> None:
    if backend.name() != "gpu":
        v.skipped("timing", "on a GPU only: the emulator's speed says nothing about a GPU's")
        return
    try:
        _time(ex, kernel, v, size)
    except fair_timing.UnfairTimingError as e:    # the timed launches skipped their work, or beat the GPU's peak
        v.fail("timing", str(e), "time a kernel only when every launch computes its whole C from the A and B it is "
                                 "given; keep no state between launches.")
    except CourseError as e:     # the course's kernel cannot run on this GPU, or the memory is short
        v.skipped("timing", f"not timed: {str(e).splitlines()[0]}")


def _time(ex: Exercise, kernel: Kernel, v: Verdict, size: int) -> None:
    M = N = K = size
    bench.check_timing(M, N, K, TIME_REPEAT)
    A, B, C = bench.device_operands(M, N, K)
    run = kernel.timed_launcher(ex.launch.grid(M, N, K), ex.launch.block, launch_args(M, N, K, 1.0, A, B, 0.0, C))
    # every launch on fresh A and B and a C of NaN, each C checked, the median held to the speed of light
    yours = fair_timing.time_fresh(run, *fair_timing.gpu_parts(A, B, C, ex.precision), n_repeat=TIME_REPEAT)
    fair_timing.check_speed_of_light(yours, M, N, K, fair_timing.speed_of_light(
        backend.current().device_info(), ex.precision), "your kernel")
    course = stages.variant(ex.course_kernel)
    config = course.config(**ex.course_config) if ex.course_config else None
    theirs, _ = bench.time_variant(course, M, N, K, config, n_repeat=TIME_REPEAT)
    cublas = bench.time_cublas(M, N, K, n_repeat=TIME_REPEAT)
    label = f"{course.name} ({(config or course.default_for(backend.arch())).label()})"
    rows = [("yours", yours), (label, theirs), ("cuBLAS (FP32)", cublas)]
    width = max(len(name) for name, _ in rows)
    v.numbers.update({f"{name} TFLOP/s": t.tflops(M, N, K) for name, t in rows})
    v.passed("timing", f"at {M} × {N} × {K}, median of {TIME_REPEAT}:",
             *(f"{name:<{width}} {t.median_ms:8.3f} ms {t.tflops(M, N, K):7.2f} TFLOP/s "
               f"{100 * cublas.median_ms / t.median_ms:6.1f} % of cuBLAS" for name, t in rows))

