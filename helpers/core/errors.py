"""The course's exceptions: each says what went wrong, where, and what to do about it.

In a notebook they print as a short message instead of a long traceback, because the
traceback would point into the course's machinery rather than at the learner's kernel.
"""

from __future__ import annotations


class CourseError(Exception):
    """Base of every error the course raises on purpose."""

    def _render_traceback_(self):  # IPython shows this instead of the traceback
        return [f"{type(self).__name__}: {line}" if i == 0 else line
                for i, line in enumerate(str(self).splitlines())]


class CompilerNotFoundError(CourseError, RuntimeError):
    """No C++ compiler for the CPU emulator."""


class KernelCompileError(CourseError):
    """The kernel source did not compile; the message holds the compiler's own."""


class UnsupportedFeatureError(CourseError):
    """The kernel uses something this backend cannot run (inline PTX on the emulator, wgmma on a
    GPU older than Hopper)."""


class LaunchConfigError(CourseError, ValueError):
    """Grid, block or shared-memory sizes a GPU would refuse."""


class KernelArgumentError(CourseError, TypeError):
    """An argument of the wrong type, dtype, layout or shape."""


class KernelRuntimeError(CourseError):
    """The kernel failed while running."""


class OutOfBoundsError(KernelRuntimeError):
    """A load or store outside an array or outside shared memory."""


class KernelCrashError(KernelRuntimeError):
    """The kernel crashed (a bad pointer, a failed assert, an illegal address on the GPU)."""


class BarrierError(KernelRuntimeError):
    """A barrier or warp collective not every participating thread reaches (divergence, deadlock)."""


class KernelTimeoutError(KernelRuntimeError):
    """The kernel ran past the time limit (an endless loop, or a far too large launch)."""


class VerificationError(CourseError, AssertionError):
    """A kernel's result does not match the float64 reference."""


class InputError(KernelArgumentError, ValueError):
    """A size, scalar or count out of range: a dimension below 1 or past 32-bit indexing, a NaN or
    infinite alpha or beta, a problem larger than the memory the machine has."""


class CacheError(CourseError, OSError):
    """The build cache cannot be written (read-only, full, no permission), or an entry stays
    damaged after it was rebuilt."""


class SandboxUnavailableError(CourseError, RuntimeError):
    """The grader's sandbox (bubblewrap) is not installed or cannot start here (user namespaces off)."""


class ResultsFileError(CourseError, ValueError):
    """A results file (results/*.json, a ladder) that cannot be read: cut short, a timing that is
    NaN, zero or negative, a key missing."""
