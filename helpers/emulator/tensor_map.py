"""The emulator's TMA tensor map: what a kernel's `const __grid_constant__ TensorMap` parameter holds on the CPU.

On a GPU the driver encodes 128 opaque bytes naming the array's address. The emulator's kernels run in another
process, where the array is one of the launch's shared buffers: the map names it by buffer index, which the
launcher fills in (TensorMapArg.encode). runtime/runtime_tma.cpp reads the same layout (struct EmuTensorMap).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAGIC = 0x50414D54  # "TMAP"
SIZE = 128
_LAYOUT = struct.Struct("<IIQQQIIII")  # magic, buffer, rows, cols, pitch (bytes), box rows, box cols, tf32, swizzle


@dataclass(frozen=True, eq=False)
class TensorMapArg:
    """A tensor map of `array` (rows x cols floats, rows pitch_floats apart), copied box_rows x box_cols at a time
    in the 128-byte swizzle; tf32: the copy rounds each float to the nearest TF32; writable: the kernel stores
    through it (TMA stores: the launch copies the array back, as it does a pointer's to non-const)."""
    array: np.ndarray
    rows: int
    cols: int
    pitch_floats: int
    box_rows: int
    box_cols: int
    tf32: bool = False
    writable: bool = False
    is_tensor_map = True  # what the launch checks look for
    itemsize = 4          # the elements' bytes (a trace's per-buffer element size)

    def encode(self, buffer: int) -> bytes:
        head = _LAYOUT.pack(MAGIC, buffer, self.rows, self.cols, 4 * self.pitch_floats, self.box_rows,
                            self.box_cols, int(self.tf32), 128)
        return head + bytes(SIZE - len(head))
