"""The ground layer: the course's facts. Errors, paths, the stage registry and kernel configurations,
kernel source files, GPU architectures and devices, results files, progress bars. Imports nothing
else of helpers."""
