"""TMA tensor maps of a kernel's operands (stage 12): what the copy engine needs to know of A and B.

A kernel whose configuration has TENSOR_MAPS takes, in place of the pointers to A and B, a tensor map of each:
the array's address, its sizes, its row pitch and the box one copy moves. On a GPU the driver encodes it
(cuTensorMapEncodeTiled, through gpu_backend.tensor_map); on the emulator the map names the array and the
runtime reads it (cpu_backend.tensor_map). Both check it first with the driver's rules, here, so that a map
the driver would refuse is refused on a laptop too, with the rule named.
"""

from __future__ import annotations

from helpers.core.configs_hopper import TensorMapBox
from helpers.core.errors import KernelArgumentError
from helpers.run import backend

SWIZZLE_BYTES = 128   # the 128-byte swizzle: a box's rows are at most 128 bytes
PITCH_ALIGN = 16      # the driver's rule: a row pitch is a multiple of 16 bytes
BOX_ROW_ALIGN = 16    # and so is a box's row (boxDim[0] x the element size), for an interleave of NONE
MAX_BOX = 256         # and a box at most 256 elements along each dimension


def check(box: TensorMapBox, pitch_floats: int, address: int, what: str) -> None:
    """Raises KernelArgumentError naming the driver's rule that the map of `what` would break."""
    if address % 16:
        raise KernelArgumentError(f"the tensor map of {what}: its array starts {address % 16} bytes past a 16-byte "
                                  "boundary; TMA needs 16-byte aligned arrays. Fix: pass a fresh array (CuPy's and "
                                  "NumPy's are aligned), not a view that starts inside one.")
    if (4 * pitch_floats) % PITCH_ALIGN:
        raise KernelArgumentError(f"the tensor map of {what}: rows {4 * pitch_floats} bytes apart; TMA needs a row "
                                  f"pitch that is a multiple of {PITCH_ALIGN} bytes. Fix: operand_maps() copies the "
                                  "array to a padded pitch.")
    if not (1 <= box.box_rows <= MAX_BOX and 1 <= box.box_cols <= MAX_BOX):
        raise KernelArgumentError(f"the tensor map of {what}: a box of {box.box_rows} x {box.box_cols}; TMA copies "
                                  f"boxes of 1 to {MAX_BOX} elements along each dimension.")
    if (4 * box.box_cols) % BOX_ROW_ALIGN:
        raise KernelArgumentError(f"the tensor map of {what}: box rows of {box.box_cols} floats, {4 * box.box_cols} "
                                  f"bytes; the driver needs a box's row to be a multiple of {BOX_ROW_ALIGN} bytes "
                                  f"(boxDim[0] x 4 a multiple of 16): a multiple of 4 floats.")
    if 4 * box.box_cols > SWIZZLE_BYTES:
        raise KernelArgumentError(f"the tensor map of {what}: box rows of {4 * box.box_cols} bytes; in the "
                                  f"{SWIZZLE_BYTES}-byte swizzle a box's rows are at most {SWIZZLE_BYTES} bytes.")


def pitched(a, rows: int, cols: int, xp):
    """`a` itself where its rows are 16-byte aligned, else a copy with rows padded to a multiple of 4 floats
    (the padding is never read: the map's width stays `cols`, and TMA fills past it with zeros)."""
    if cols % 4 == 0:
        return a, cols
    pitch = -(-cols // 4) * 4
    out = xp.zeros((rows, pitch), dtype=a.dtype)
    out[:, :cols] = a
    return out, pitch


def operand_maps(config, M: int, N: int, K: int, A, B, bk=None) -> tuple[object, object, tuple]:
    """(map of A, map of B, the arrays they read, to be kept alive until the kernel has run), for backend bk
    (default: the current one)."""
    bk = bk or backend.current()
    maps, keep = [], []
    for box, array, name in zip(config.tensor_maps(M, N, K), (A, B), ("A", "B")):
        array, pitch = pitched(array, box.rows, box.cols, bk.xp)
        check(box, pitch, bk.address(array), name)
        maps.append(bk.tensor_map(array, box, pitch))
        keep.append(array)
    return maps[0], maps[1], tuple(keep)


def output_map(config, M: int, N: int, C, bk=None):
    """The tensor map of C that config's kernel stores through (EPILOGUE = 1: config.output_map), or None. C must
    be one a map can describe (config.for_output(N, address) keeps EPILOGUE = 1): the rules are checked here too."""
    box = getattr(config, "output_map", lambda M, N: None)(M, N)
    if box is None:
        return None
    bk = bk or backend.current()
    check(box, N, bk.address(C), "C")
    return bk.tensor_map(C, box, N)
