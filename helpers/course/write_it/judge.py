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

An exercise whose result must be the same bits at every run (split-K, Exercise.same_bits) runs every shape
twice and compares the bits. A wrong result with no race behind it is traced for the line that gives a thread
the wrong operands (diagnose_operands.wrong_operands): a row of A or a column of B that is not its own.

The emulator stops an out-of-bounds access while "correct" runs the shapes, and a wrong result is traced
for a race first: either fails "safe", but the report keeps the order above, "correct" first (not
finished, or the wrong result), then "safe" with the cause.

A pass reports what each step measured. A source that still holds a TODO block as the starter has it
and fails is "not done yet", not an error: a notebook's starter cell runs clean.
"""

from __future__ import annotations

import numpy as np

from helpers.core import stages
from helpers.core.errors import CourseError, KernelCompileError, KernelRuntimeError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource
from helpers.course.write_it import barriers, diagnose, operands
from helpers.course.write_it.exercise import Call, Exercise
from helpers.course.write_it.registry import exercise as find
from helpers.course.write_it.verdict import Verdict
from helpers.measure import bench, fair_timing, memory, trace, verify
from helpers.run import backend, cpu_backend
from helpers.run.kernel_loader import Kernel, load_kernel

TIME_SIZE = 2048      # M = N = K of the GPU timing
TIME_REPEAT = 20


def judge(exercise_id, path, where: str | None = None, time_size: int = TIME_SIZE, seed: int | None = None,
          timed: bool = True) -> Verdict:
    """Checks the kernel in the .cu file `path` against exercise `exercise_id` on the backend in use.
    `where` names the source in messages ("your cell"; default: the file's path); timed=False leaves out
    the GPU timing (a reveal or a ladder that times on its own)."""
    ex = find(exercise_id)
    source = KernelSource.read(path)
    starter = ex.starter_path.read_text() if ex.starter_path.is_file() else None
    v = Verdict(ex.id, ex.kernel, where or source.display_path, _backend_words(),
                todo_lines=diagnose.todo_lines(source.text, starter))
    problem = diagnose.signature_problem(ex, source.text)
    if problem:
        line, cause, hint = problem
        return v.fail("contract", cause, hint, line, source.line(line) if line else "")
    v.passed("contract", ex.signature())
    kernels = _compile(ex, source, v)
    if kernels is None:
        return v
    rng = np.random.default_rng(seed)
    if not _correct(ex, source, kernels, v, rng) or not _safe(ex, source, v, rng) or not _lesson(ex, source, v, rng):
        return v
    if timed:
        _timing(ex, kernels, v, time_size)
    return v


def _backend_words() -> str:
    if backend.name() == "gpu":
        return f"GPU ({backend.current().device_info().name})"
    return "CPU emulator"


def _compile(ex: Exercise, source: KernelSource, v: Verdict) -> dict[str, Kernel] | None:
    """Every kernel of the contract, compiled for the backend in use (NVRTC first); None where one fails."""
    if backend.name() == "gpu" and ex.gpu_arch:
        why = stages.arch_refusal(ex.gpu_arch, f"exercise {ex.id}", backend.current().device_info().compute_capability)
        if why:
            v.fail("compiles", why, "run the check on the CPU emulator (--backend cpu): it runs this kernel on any "
                                    "machine.")
            return None
    try:
        kernels = {name: load_kernel(source.path, name) for name, _ in ex.signatures()}
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
    return kernels


def _operands(s: verify.Shape, rng):
    verify.check_inputs(s)
    return verify.random_operands(s, rng)


def _run(ex: Exercise, kernels: dict[str, Kernel], s: verify.Shape, A, B, C0) -> np.ndarray:
    bk = backend.current()
    dC = bk.to_device(C0)
    for call in ex.launches(s.M, s.N, s.K, s.alpha, bk.to_device(A), bk.to_device(B), s.beta, dC, bk):
        kernels[call.kernel](call.grid, call.block, call.args, shared_mem=call.shared_mem)
    return bk.to_host(dC)


def _runtime_failure(v: Verdict, source: KernelSource, e: KernelRuntimeError, during: str) -> bool:
    line, cause, fix = diagnose.runtime_error(str(e), source.path, source.text)
    v.fail("safe", f"{type(e).__name__} {during}: {cause}", fix or "see the message above.", line,
           source.line(line) if line else "")
    return False


def _correct(ex: Exercise, source: KernelSource, kernels: dict[str, Kernel], v: Verdict, rng) -> bool:
    done: list[verify.Check] = []
    for s in ex.shapes:
        A, B, C0 = _operands(s, rng)
        try:
            C = _run(ex, kernels, s, A, B, C0)
            again = _run(ex, kernels, s, A, B, C0) if ex.same_bits else C
        except KernelRuntimeError as e:
            v.skipped("correct", f"not finished: the emulator stopped the kernel on {diagnose.shape_words(s)} "
                                 f"(see safe, below)" + (f"; the {len(done)} shape{'s' * (len(done) > 1)} before it "
                                 f"passed" if done else ""))
            return _runtime_failure(v, source, e, f"on {diagnose.shape_words(s)}")
        ref, tol = verify.reference(A, B, C0, s.alpha, s.beta, ex.precision)
        result = verify.compare(C, C0, ref, tol, s, worst=3)
        if not result.ok:
            return _wrong(ex, source, kernels, v, result, done, rng)
        if not np.array_equal(C.view(np.uint32), again.view(np.uint32)):
            return _not_the_same_bits(ex, source, v, s, C, again)
        done.append(result)
    worst = max(done, key=lambda c: c.worst_ratio)
    v.numbers["worst error / tolerance"] = worst.worst_ratio
    poisoned = [c.shape.dims for c in done if c.shape.beta == 0]
    v.passed("correct", f"all {len(done)} shapes ({', '.join(c.shape.dims for c in done)}), fresh "
                        f"random data against float64" + (f"; C full of NaN with beta = 0 on {', '.join(poisoned)}"
                                                          if poisoned else ""),
             f"largest error {worst.worst_ratio:.2f} of the tolerance (on {diagnose.shape_words(worst.shape)})",
             *(["every shape run twice on the same data: the same bits both times"] if ex.same_bits else []))
    return True


def _not_the_same_bits(ex: Exercise, source: KernelSource, v: Verdict, s: verify.Shape, C, again) -> bool:
    differ = int(np.count_nonzero(C.view(np.uint32) != again.view(np.uint32)))
    v.numbers["elements that differ between two runs"] = differ
    atomics = diagnose.atomic_lines(source.text)
    v.fail("correct", f"two runs on the same data of {diagnose.shape_words(s)} gave different bits in {differ} of "
                      f"{s.M * s.N} elements of C: right to the tolerance both times, but not reproducible",
           ("an atomic add sums in whatever order the threads arrive, and float addition is not associative: add the "
            "slices in one fixed order instead (one thread per element, reading each slice's partial sum)."
            if atomics else "the sum must be made in the same order at every run: one thread per element of C adds "
                            "the slices' partial sums in a fixed order."),
           atomics[0] if atomics else None, source.line(atomics[0]) if atomics else "")
    return False


def _wrong(ex: Exercise, source: KernelSource, kernels: dict[str, Kernel], v: Verdict, result: verify.Check,
           done: list, rng) -> bool:
    """A wrong result: a race or a read of unwritten shared memory is the likelier cause, so look first; then a
    line of the trace that hands a thread an operand that is not its own (a row of A, a column of B: the line
    to fix); else the hint, which may run the kernel on a shape that is a multiple of the tile."""
    details = tuple(line.strip() for line in result.details().splitlines()[1:])
    cause = (f"wrong result on {diagnose.shape_words(result.shape)}: {result.wrong} of "
             f"{result.shape.M * result.shape.N} elements wrong"
             + (f", {result.nan} NaN" if result.nan else "")
             + ((f", {result.unwritten} still hold C's NaN (never written, or computed from C)" if result.shape.beta == 0
                 else f", {result.unwritten} never written") if result.unwritten else ""))
    found = _races(ex, source, v, rng, also="the likelier cause of the wrong result above",
                   first=lambda: v.failed_before("correct", cause, *details))
    if found is True:
        return False
    wrong_operand = _wrong_operand(ex, source, rng)
    if wrong_operand is not None:
        v.fail("correct", cause, wrong_operand.hint(), wrong_operand.line, source.line(wrong_operand.line),
               details=details)
        return False
    aligned = ex.aligned_shape()

    def run_aligned() -> verify.Check:
        A, B, C0 = _operands(aligned, rng)
        C = _run(ex, kernels, aligned, A, B, C0)
        return verify.compare(C, C0, *verify.reference(A, B, C0, aligned.alpha, aligned.beta, ex.precision), aligned)

    try:
        hint = diagnose.wrong_hint(result, done, ex, run_aligned)
    except KernelRuntimeError as e:   # stopped on the aligned shape: that is the likelier cause
        v.failed_before("correct", cause, *details)
        return _runtime_failure(v, source, e, f"on {aligned.dims} (a multiple of the tile, run to see whether only "
                                              f"the edges are wrong)")
    v.fail("correct", cause, hint, details=details)
    return False


def _wrong_operand(ex: Exercise, source: KernelSource, rng) -> operands.WrongOperand | None:
    """The line that hands a thread of block 0 an operand not its own, at a size that is a multiple of every tile."""
    try:
        t = _trace(ex, source, ex.lesson_size, (0,), rng)
    except KernelRuntimeError:
        return None
    return operands.wrong_operands(t, *ex.lesson_size, source.line)


def _trace(ex: Exercise, source: KernelSource, size: tuple[int, int, int], blocks, rng) -> trace.Trace:
    """A trace of the first kernel the exercise launches (its main one), on the emulator, on fresh data; `blocks`
    the linear indices of the blocks traced, or a function of the grid that gives them (None: trace's sample)."""
    s = verify.Shape("trace", *size)
    A, B, C = _operands(s, rng)
    call: Call = ex.launches(*size, s.alpha, A, B, s.beta, C, cpu_backend)[0]
    blocks = blocks(call.grid) if callable(blocks) else blocks
    return trace.capture(source.path, call.kernel, call.grid, call.block, call.args, blocks, call.shared_mem)


def _races(ex: Exercise, source: KernelSource, v: Verdict, rng, also: str = "", first=lambda: None):
    """Fails the check and returns True where the trace finds a race or an unwritten read (after calling
    `first`, which reports what made the check look); else the trace (None where tracing stopped on something
    that is not the kernel's: returned True then too, having failed the check)."""
    try:
        t = _trace(ex, source, ex.race_size, None, rng)
    except KernelRuntimeError as e:
        first()
        return not _runtime_failure(v, source, e, "while tracing")
    # TMA's copies write shared memory outside the threads' records: there the runtime's clocks judge what is read
    # before it lands (memory.races does), and a read of a word no thread stored is no evidence of anything
    copies = t.events is not None and bool(np.isin(t.events["op"], (5, 6, 7)).any())
    races, unwritten = memory.races(t), ([] if copies else memory.unwritten_reads(t))
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
        if r.ordering == "clocks":   # mbarriers and TMA copies order the accesses: the runtime's words
            v.fail("safe", f"race on {r.array}: {r}{tail}", diagnose.clock_race_hint(r, source.line), r.second[1],
                   source.line(r.second[1]), tuple(str(x) for x in races[1:3]))
            return True
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
    return t



def _safe(ex: Exercise, source: KernelSource, v: Verdict, rng) -> bool:
    t = _races(ex, source, v, rng)
    if t is True:
        return False
    M, N, K = ex.race_size
    blocks = ", ".join(map(str, v.numbers["traced blocks"]))
    gx, gy, gz = t.grid
    grid = (f" (the first, a middle and the last of its {gx} × {gy}{f' × {gz}' if gz > 1 else ''} blocks)"
            if len(t.blocks) == 3 else "")
    v.passed("safe", "no out-of-bounds access, divergent barrier or crash on any shape",
             f"no race and no read of unwritten shared memory in blocks {blocks}{grid} of a {M} × {N} × {K} launch")
    return True


def _lesson(ex: Exercise, source: KernelSource, v: Verdict, rng) -> bool:
    M, N, K = ex.lesson_size
    try:
        t = _trace(ex, source, ex.lesson_size, ex.lesson_blocks, rng)
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


def _timing(ex: Exercise, kernels: dict[str, Kernel], v: Verdict, size: int) -> None:
    if backend.name() != "gpu":
        v.skipped("timing", "on a GPU only: the emulator's speed says nothing about a GPU's")
        return
    try:
        rows = time_beside(ex, kernels, size)
    except fair_timing.UnfairTimingError as e:    # the timed launches skipped their work, or beat the GPU's peak
        v.fail("timing", str(e), "time a kernel only when every launch computes its whole C from the A and B it is "
                                 "given; keep no state between launches.")
        return
    except CourseError as e:     # the course's kernel cannot run on this GPU, or the memory is short
        v.skipped("timing", f"not timed: {str(e).splitlines()[0]}")
        return
    M = N = K = size
    width = max(len(name) for name, _, _ in rows)
    v.numbers.update({f"{name} TFLOP/s": t.tflops(M, N, K) for name, t, _ in rows})
    v.numbers.update({f"{name} ms": t.median_ms for name, t, _ in rows})
    v.passed("timing", f"at {M} × {N} × {K}, median of {TIME_REPEAT} (each % of cuBLAS in its own precision):",
             *(f"{name:<{width}} {t.median_ms:8.3f} ms {t.tflops(M, N, K):7.2f} TFLOP/s "
               f"{pct:6.1f} % of cuBLAS" for name, t, pct in rows))


def time_beside(ex: Exercise, kernels: dict[str, Kernel], size: int = TIME_SIZE
                ) -> list[tuple[str, bench.Timing, float]]:
    """On a GPU: (name, timing, % of cuBLAS) of the learner's kernels, the course's kernel and cuBLAS at size³, each
    row's percentage against cuBLAS in that row's precision (TF32 for a TF32 exercise; exercise 12's FP32 ring is
    timed beside stage 12's TF32 kernel, so both cuBLAS rows are there); every one of the learner's launches on
    fresh inputs and checked (measure/fair_timing.py: UnfairTimingError where a launch skipped its work or the
    median beats the GPU's peak)."""
    M = N = K = size
    bench.check_timing(M, N, K, TIME_REPEAT)
    A, B, C = bench.device_operands(M, N, K)
    bk = backend.current()
    calls = ex.launches(M, N, K, 1.0, A, B, 0.0, C, bk)
    runs = [kernels[c.kernel].timed_launcher(c.grid, c.block, c.args, shared_mem=c.shared_mem) for c in calls]
    # every launch on fresh A and B and a C of NaN, each C checked, the median held to the speed of light
    yours = fair_timing.time_fresh(lambda: [run() for run in runs], *fair_timing.gpu_parts(A, B, C, ex.precision),
                                   n_repeat=TIME_REPEAT)
    fair_timing.check_speed_of_light(yours, M, N, K, fair_timing.speed_of_light(bk.device_info(), ex.precision),
                                     "your kernel")
    course = stages.variant(ex.course_kernel)
    config = course.config(**ex.course_config) if ex.course_config else None
    theirs, _ = bench.time_variant(course, M, N, K, config, n_repeat=TIME_REPEAT)
    tf32, course_tf32 = ex.precision == "tf32", course.precision == "tf32"
    cublas = {p: bench.time_cublas(M, N, K, n_repeat=TIME_REPEAT, tf32=p) for p in dict.fromkeys((tf32, course_tf32))}
    label = (f"{course.name} ({(config or course.default_for(backend.arch())).label()})"
             + (f", {course.precision.upper()}" if course_tf32 != tf32 else ""))
    rows = [("yours", yours, cublas[tf32]), (label, theirs, cublas[course_tf32]),
            *((f"cuBLAS ({'TF32' if p else 'FP32'})", t, t) for p, t in cublas.items())]
    return [(name, t, 100 * ref.median_ms / t.median_ms) for name, t, ref in rows]
