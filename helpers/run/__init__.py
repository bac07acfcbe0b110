"""Running a kernel: choosing a backend (CuPy on a GPU, the CPU emulator), compiling a kernel file
(NVRTC and ptxas through the toolchain), launching it as an SGEMM. Imports core and emulator only."""
