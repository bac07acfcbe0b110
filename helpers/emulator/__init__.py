"""The CPU emulator: the course's CUDA C++ kernels, unchanged, on any machine with a C++ compiler."""

from .compiler import Program, build, find_compiler
from .launcher import default_workers, launch, time_limit

__all__ = ["Program", "build", "find_compiler", "launch", "default_workers", "time_limit"]
