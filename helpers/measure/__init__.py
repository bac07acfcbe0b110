"""The instruments: correctness, timing, memory traces and the accesses read from them, resources
and occupancy, intensity and roofline models, pipelines, Nsight Compute, autotuning. They compute;
they draw nothing (no matplotlib here). Imports run, emulator and core."""
