"""What one "write it yourself" exercise is: its contract (the kernel's name and signature, the
launch geometry as a function of M, N, K, the sizes that must work, the stage's own rules), its
starter and solution files, the lesson its check measures, the course kernel it is timed beside, its
hints in levels, and the exercise whose kernel it grows from (`%%kernel NN --from-mine`).

Most exercises are one launch of one kernel of the course signature (Launch). One that is not (split-K's
two kernels and workspace, stage 12's tensor maps and dynamic shared memory) names its kernels and their
parameters in `kernels` and says how it runs in `calls` (a function returning the Calls that compute C)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from helpers.measure import verify
from helpers.measure.trace import Trace
from helpers.run.gemm import launch_args

HERE = Path(__file__).resolve().parent
STARTERS = HERE / "starters"        # handed out: what the notebook's %%kernel cell holds
SOLUTIONS = HERE / "solutions"      # the teacher's: a student copy of the course leaves this folder out

# The course signature, parameter by parameter (types as the check compares them, and names).
SIGNATURE = (("int", "M"), ("int", "N"), ("int", "K"), ("float", "alpha"), ("const float*", "A"),
             ("const float*", "B"), ("float", "beta"), ("float*", "C"))


def signature_text(kernel: str, params: tuple[tuple[str, str], ...] = SIGNATURE) -> str:
    text = ", ".join(f"{t} {n}" for t, n in params)
    return f'extern "C" __global__ void {kernel}({text})'


@dataclass(frozen=True)
class Call:
    """One launch of one of the learner's kernels: its name, geometry, arguments (arrays of the backend
    that runs it) and dynamic shared memory; `keep`: arrays the arguments refer to without holding them."""
    kernel: str
    grid: tuple
    block: tuple
    args: tuple
    shared_mem: int = 0
    keep: tuple = ()


# calls(exercise, M, N, K, alpha, A, B, beta, C, bk) -> the launches that compute C on backend bk's arrays
Calls = Callable[..., list[Call]]


@dataclass(frozen=True)
class Launch:
    """A fixed block, and a grid that covers C: each block computes `per_block` = (columns, rows) of C."""
    block: tuple[int, ...]
    per_block: tuple[int, int]
    layers: str = ""  # the grid's third extent where it is not 1, as the contract names it (split-K's S)

    def grid(self, M: int, N: int, K: int) -> tuple[int, int, int]:
        cols, rows = self.per_block
        return (-(-N // cols), -(-M // rows), 1)

    def text(self) -> str:
        cols, rows = self.per_block
        block = f"({', '.join(map(str, self.block))})" if len(self.block) > 1 else str(self.block[0])
        return f"block {block} and grid (ceil(N/{cols}), ceil(M/{rows}){', ' + self.layers if self.layers else ''})"


@dataclass(frozen=True)
class Lesson:
    """What a check measured of the stage's lesson in the learner's own trace."""
    ok: bool
    measured: tuple[str, ...]           # the numbers, one line each
    cause: str = ""                     # where not ok: what the trace shows
    line: int | None = None             # the learner's line it points at
    hint: str = ""
    numbers: dict = field(default_factory=dict)


# lesson(trace of block 0 at lesson_size, M, N, K) -> Lesson
LessonCheck = Callable[[Trace, int, int, int], Lesson]


@dataclass(frozen=True)
class Exercise:
    id: str                        # "03": python -m helpers exercise check 03 FILE.cu, %%kernel 03
    stage: str                     # the stage (helpers.core.stages) whose notebook holds it
    kernel: str                    # the __global__ function's name (extern "C")
    title: str                     # "shared-memory tiling"
    launch: Launch
    rules: tuple[str, ...]         # the stage's own terms of the contract, one line each
    lesson: LessonCheck
    lesson_text: str               # what the lesson check asks, for the notebook and `exercise list`
    course_kernel: str             # the registered variant a GPU times it beside
    course_config: dict = field(default_factory=dict)   # its configuration ({}: its default)
    sizes: str = "any M, N, K ≥ 1"
    shapes: tuple[verify.Shape, ...] = verify.WRITE_IT_SHAPES
    lesson_size: tuple[int, int, int] = (64, 64, 64)    # traced for the lesson: block 0
    # the blocks traced for it (linear indices), from the launch's grid (default: block 0)
    lesson_blocks: Callable[[tuple], tuple[int, ...]] = lambda grid: (0,)
    race_size: tuple[int, int, int] = (67, 61, 53)      # traced for races: first, middle and last block
    precision: str = "fp32"        # the arithmetic the results are checked against: "tf32" for tensor cores
    # the stage's likely causes of a result wrong inside the matrices, not only at their edges ("": the general ones)
    interior_causes: str = ""
    # Hints in levels (write_it.hint): the idea, then what each thread computes, then the code (level 3, given
    # only when asked for by number). Each in words a learner reads before writing: no index expression below 3.
    hints: tuple[str, ...] = ()
    previous: str | None = None    # the exercise whose kernel this one grows from (%%kernel NN --from-mine)
    headline: str = ""             # the lesson's number the learner's ladder shows (a key of Lesson.numbers)
    # More than one kernel, or not the course signature: (name, parameters) of each, the first the one traced
    kernels: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    calls: Calls | None = None     # how the kernels compute C (default: one launch of `kernel` with `launch`)
    gpu_arch: str | None = None    # the GPUs that run it: None (every one), "sm_80", "sm_90a" (stages.Variant's)
    same_bits: bool = False        # the result must be the same bits at every run: the check runs it twice

    def aligned_shape(self) -> verify.Shape:
        """A shape that is a multiple of every tile of the stage: 2 block tiles down, 3 across (M != N, so that
        rows and columns swapped show), K = 48 (a multiple of every BK of the course, 8 or 16). A kernel right on
        it and wrong on odd shapes is wrong at the edges."""
        cols, rows = self.launch.per_block
        return verify.Shape("multiples of the tile", 2 * rows, 3 * cols, 48)

    def is_aligned(self, s: verify.Shape) -> bool:
        """Whether no tile of the stage reaches past M, N or K of shape `s` (K: a multiple of 16)."""
        cols, rows = self.launch.per_block
        return s.M % rows == 0 and s.N % cols == 0 and s.K % 16 == 0

    @property
    def starter_path(self) -> Path:
        return STARTERS / f"{self.id}.cu"

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS / f"{self.id}.cu"

    def signature(self) -> str:
        return "; ".join(signature_text(name, params) for name, params in self.signatures())

    def signatures(self) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
        """(name, parameters) of every kernel the contract names, the one traced first."""
        return self.kernels or ((self.kernel, SIGNATURE),)

    def launches(self, M: int, N: int, K: int, alpha, A, B, beta, C, bk) -> list[Call]:
        """The launches that compute C = alpha A B + beta C with the learner's kernels, on backend bk's arrays."""
        if self.calls is not None:
            return self.calls(self, M, N, K, alpha, A, B, beta, C, bk)
        return [Call(self.kernel, self.launch.grid(M, N, K), self.launch.block,
                     launch_args(M, N, K, alpha, A, B, beta, C))]

    def contract(self) -> str:
        """The contract as every notebook states it (Markdown)."""
        kernels = [f"- `{signature_text(name, params)}`" for name, params in self.signatures()]
        lines = [f"**Exercise {self.id} · {self.title}.** Write {'this kernel' if len(kernels) == 1 else 'these kernels'}:",
                 "",
                 *kernels,
                 "- row-major: A is M × K, B is K × N, C is M × N; C = alpha·A·B + beta·C, and with beta = 0, "
                 "C is not read (it may hold NaN)",
                 *(f"- {rule}" for rule in self.rules),
                 f"- launched with {self.launch.text()}",
                 f"- correct for {self.sizes}"]
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: id, stage, kernel, launch shape (python -m helpers exercise list)."""
        return f"{self.id}  stage {self.stage}  {self.kernel:<22} {self.launch.text()}  ({self.title})"
