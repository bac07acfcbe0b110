"""A plan of one product shape for helpers.sgemm: built once, then run on any arrays of that shape (as CUTLASS's
`Gemm` operation is built once and run many times).

Building it chooses the kernel (or takes the choice given), compiles it, checks its launch geometry and records
the stamps of the files it came from (the kernel, its headers, the dispatch tables). Running it only prepares the
operands (a padded copy where the choice pads them), allocates the output (and a split's workspace, from the
array module's pool) and enqueues the launches on the current stream: no file is opened, nothing is compiled,
nothing synchronizes. A plan holds no array between runs, so threads may run one plan at once.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from helpers.core import file_stamps, stages
from helpers.core.configs import KernelConfig
from helpers.run import backend, gemm, tensor_maps


def _round4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass(frozen=True)
class _Step:
    """One prepared launch and how its arguments are made from the run's arrays and scalars."""
    launch: object          # launcher(args) from kernel_loader.Kernel.launcher
    args: object            # args(A, B, C, W, alpha, beta) -> the kernel's arguments


@dataclass(frozen=True, eq=False)
class Plan:
    """alpha A B + beta C for one shape, kernel and array kind, ready to run (see the module's docstring).
    `choice` says which kernel and why; `deps` are the files whose change makes the plan stale."""
    M: int
    N: int
    K: int
    beta_nonzero: bool
    precision: str
    kind: str                       # "numpy" or "cupy": the arrays it takes and gives
    choice: object                  # dispatch.Choice or dispatch_tf32.Tf32Choice
    deps: tuple
    _xp: object = field(repr=False)
    _steps: tuple = field(repr=False)
    _Kp: int = field(repr=False)    # K and N as the kernel sees them (padded to a multiple of 4, or not)
    _Np: int = field(repr=False)
    _workspace: int = field(repr=False)   # floats of workspace a run allocates (0: none)
    _none: object = field(repr=False)     # the one-float array passed for an unused workspace
    _maps: object = field(repr=False)     # (box of A, box of B) for a kernel that takes tensor maps, else None
    _to_host: object = field(repr=False)  # the backend's to_host where NumPy arrays run on a GPU, else None
    looked: list = field(default_factory=lambda: [time.monotonic()], repr=False, compare=False)  # deps last checked

    def fresh(self) -> bool:
        """Whether the files the plan was built from are unchanged."""
        return file_stamps.unchanged(self.deps)

    def run(self, A, B, C=None, alpha: float = 1.0, beta: float = 0.0, poison: bool = False, out=None):
        """alpha A B + beta C, as a new array of the plan's kind or into `out`. The arrays must have the plan's
        shapes and be float32, and out must not overlap A or B (helpers.sgemm checks all that); C is read only
        where beta != 0, and written only where it is `out` itself (in place, as BLAS does). poison: fill the
        output with NaN before the kernels run (beta = 0), so that an element they never write shows."""
        xp = self._xp
        if self._to_host is not None:  # NumPy arrays on a GPU: computed on the device, copied back
            result = self._run_on_device(xp.asarray(A), xp.asarray(B), None if C is None else xp.asarray(C), alpha,
                                         beta, poison, None)
            if out is None:
                return self._to_host(result)
            out[...] = self._to_host(result)
            return out
        return self._run_on_device(A, B, C, alpha, beta, poison, out)

    def _run_on_device(self, A, B, C, alpha, beta, poison, out):
        """run() with arrays of the plan's backend (CuPy's on a GPU, NumPy's on the emulator)."""
        xp, M, N, K, Kp, Np = self._xp, self.M, self.N, self.K, self._Kp, self._Np
        dA, dB = _operand(xp, A, M, K, M, Kp), _operand(xp, B, K, N, Kp, Np)
        if xp is np and dB is not dA and np.may_share_memory(dA, dB):   # the emulator wants separate buffers
            dB = dB.copy()
        keep = ()
        if self._maps is not None:  # stage 12's kernels: tensor maps of A and B (rows padded to 16 bytes)
            dA, dB, keep = self._tensor_maps(dA, dB)
        dC = out if out is not None and Np == N else xp.empty((M, Np), np.float32)
        if self.beta_nonzero:
            if C is not dC:
                dC[:, :N] = C
        elif poison:
            dC.fill(np.nan)
        W = xp.empty(self._workspace, np.float32) if self._workspace else self._none
        a, b = np.float32(alpha), np.float32(beta)
        for step in self._steps:
            step.launch(step.args(dA, dB, dC, W, a, b))
        del keep  # the arrays the maps read live until their launches are enqueued (the pool is stream-ordered)
        if Np == N:
            return dC
        if out is None:
            return xp.ascontiguousarray(dC[:, :N])
        out[...] = dC[:, :N]
        return out

    def _tensor_maps(self, A, B):
        """The maps of A and B, and the arrays they read (A and B, or copies with rows padded to 16 bytes)."""
        bk, xp = backend.current(), self._xp
        maps, arrays = [], []
        for box, array, name in zip(self._maps, (A, B), ("A", "B")):
            array, pitch = tensor_maps.pitched(array, box.rows, box.cols, xp)
            address = bk.address(array)
            if address % 16:
                tensor_maps.check(box, pitch, address, name)  # names the rule broken
            maps.append(bk.tensor_map(array, box, pitch))
            arrays.append(array)
        return maps[0], maps[1], tuple(arrays)


def _operand(xp, x, rows: int, cols: int, padded_rows: int, padded_cols: int):
    """x (rows x cols) as a C-contiguous array of padded_rows x padded_cols: x itself where it is one, else a
    copy (zeros past its rows and columns)."""
    if (padded_rows, padded_cols) == (rows, cols):
        return xp.ascontiguousarray(x)
    out = xp.zeros((padded_rows, padded_cols), np.float32)
    out[:rows, :cols] = x
    return out


def build(M: int, N: int, K: int, beta_nonzero: bool, precision: str, kind: str, choice, deps: tuple,
          variant_name: str | None = None) -> Plan:
    """The plan of `choice` (a dispatcher's choice) for this shape: its kernels compiled and their launches
    prepared. variant_name: run that kernel with the choice's configuration instead (the dispatch table's
    calibration of 11_split_k at SPLITS = 1). deps: the stamps of the dispatch tables the choice came from."""
    bk = backend.current()
    xp = bk.xp
    variant = stages.variant(variant_name or choice.variant)
    config: KernelConfig = choice.config if variant_name else choice.kernel_config
    if getattr(config, "EPILOGUE", 0) == 1:   # a TMA store's map names C's address, which a plan learns only when
        config = dataclasses.replace(config, EPILOGUE=0)   # it runs: the register epilogue, the same result
    maps = config.tensor_maps(M, N, K) if config.TENSOR_MAPS else None
    pad = bool(choice.pad) and maps is None
    Kp, Np = (_round4(K), _round4(N)) if pad else (K, N)
    sms = backend.sm_count()
    workspace = config.workspace_floats(M, Np, sms)
    gemm.check_problem(M, Np, Kp, 4 * (M * K + K * N + 2 * M * N) if kind == "numpy" else 0, "sgemm",
                       on_device=gemm.device_bytes(M, Np, Kp) + 4 * (workspace or 0))
    config.check_shape(M, Np, Kp)
    before = file_stamps.stamps([file_stamps.absolute(variant.path)])
    kernel = gemm.kernel_for(variant, config)
    headers = file_stamps.stamps([file_stamps.absolute(p) for p in kernel.source.header_paths.values()])
    m, n, k = np.int32(M), np.int32(Np), np.int32(Kp)
    grid = config.launch_grid(M, Np, sms)
    steps = [_Step(kernel.launcher(grid, config.block(), config.shared_bytes()),
                   (lambda A, B, C, W, a, b: (m, n, k, a, A, B, b, C, W)) if workspace is not None
                   else (lambda A, B, C, W, a, b: (m, n, k, a, A, B, b, C)))]
    if workspace:
        name, fgrid, fblock, ints = config.finish(M, Np, Kp, sms)
        finish = gemm.load_kernel(variant.path, name)
        lead = tuple(np.int32(i) for i in ints)
        steps.append(_Step(finish.launcher(fgrid, fblock, 0), lambda A, B, C, W, a, b: (*lead, a, W, b, C)))
    if maps is not None:   # the driver's rules on the boxes and pitches, once (the addresses are checked per run)
        for box, name in zip(maps, ("A", "B")):
            tensor_maps.check(box, _round4(box.cols), 0, name)
    return Plan(M, N, K, beta_nonzero, precision, kind, choice, before + headers + tuple(deps), xp, tuple(steps),
                Kp, Np, workspace or 0, xp.empty(1, np.float32) if workspace is not None else None, maps,
                bk.to_host if kind == "numpy" and bk.NAME == "gpu" else None)
