"""The CPU emulator: the course's CUDA C++ kernels, unchanged, on any machine with a C++ compiler.

How it works
- compiler.py builds a .cu file with g++ or clang++, force-including runtime/cuda_emu.h (the
  CUDA keywords, built-in variables, vector types, barriers, shuffles, atomics, math) and linking
  the runtime, runtime/runtime_*.cpp (runtime_internal.h describes its files). The source is
  rewritten in three ways that move no line, so messages keep the .cu file's own line numbers
  (compiler.py's docstring describes them), then preprocessed and checked to be exactly what NVRTC
  compiled (same_code.py: NVRTC's macros, the same branches of every #if, no file NVRTC did not read,
  nothing a macro hides), and that preprocessed text is compiled.
- build_cache.py keeps the builds on disk (TBT_CACHE_DIR): each entry written whole or not at all,
  checked against its recorded size and SHA-256 when used, built again once (one line says so) when
  a crash or a full disk damaged it; a cache folder that cannot be written gives way to a temporary one.
- Each CUDA thread is a fiber with its own stack (a hand-written context switch on x86-64,
  ucontext elsewhere); fibers switch only at barriers and warp collectives. A block's fibers
  share its shared memory, which starts as 0xFF bytes (NaN), never zeros.
- Blocks are spread over forked worker processes, one per core; device buffers are shared memory
  files mapped at 256-byte (page) aligned addresses inside an arena of inaccessible gaps.
- Every load and store is checked: the kernel is compiled with address-sanitizer instrumentation
  whose run-time functions are the emulator's own (inline shadow checks by default; checks="calls"
  calls the runtime at every access, the hook for memory traces).
- A kernel runs in its own process group, so a crash, a deadlock or an endless loop ends only that:
  the launch raises an exception naming the kernel, thread, block, array, index and source line,
  and the caller's arrays are left as they were.

- Asynchronous copies (<cuda_pipeline.h>, runtime/include) are checked and traced where they are
  issued and land in shared memory only when their thread waits for them, so a missing wait or
  barrier shows up in the results and in the race check.

Limits: inline PTX (asm) is refused with a message; wmma fragments are for the stage that teaches
them (runtime/include is where their headers go). Tested on x86-64
Linux with g++; clang++ and other platforms take the same code path but are not tested here.
"""

from helpers.emulator.compiler import Program, build, find_compiler
from helpers.emulator.launcher import default_workers, launch, time_limit, trace

__all__ = ["Program", "build", "find_compiler", "launch", "trace", "default_workers", "time_limit"]
