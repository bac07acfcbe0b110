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
