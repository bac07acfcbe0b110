"""The configuration of 11_stream_k: stage 12's tiles (12_warp_specialized's BM, CONSUMERS, STAGES, ROUND) walked by
persistent blocks that share the last tiles' k-tiles out evenly (stream-K), and the launch of its fix-up kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from helpers.core.configs import KernelConfig, ceil_div
from helpers.core.configs_hopper import TensorMapBox, WarpSpecializedConfig


@dataclass(frozen=True)
class StreamKConfig(KernelConfig):
    """12_warp_specialized's tiles and pipeline, one block per SM, with the last tiles shared out by stream-K:
    SK_WAVES = 0 none (12's schedule), 1 the tiles of the part-empty last wave, 2 those and one whole wave more.
    The parts of shared tiles go to a workspace of 2 tiles per block, which fixup_stream_k adds in a fixed order.
    SLICES = S > 1 (with SK_WAVES = 1) launches S blocks per tile instead of one per SM: each block's run is then
    one S-th of a tile's k-tiles, the same k-tiles in every tile (split-K, by stream-K's code). Like
    12's PERSISTENT, a launch setting, not a template argument."""
    BM: int = 256
    CONSUMERS: int = 2
    STAGES: int = 4
    ROUND: int = 1
    SK_WAVES: int = 1
    SLICES: int = 0
    BK: ClassVar[int] = 32
    TENSOR_MAPS: ClassVar[bool] = True
    SHARED_FORMULA: ClassVar[str] = WarpSpecializedConfig.SHARED_FORMULA
    FINISH_THREADS: ClassVar[int] = 256   # fixup_stream_k's block: 4 floats a thread

    def tiles_config(self) -> WarpSpecializedConfig:
        """12_warp_specialized's configuration of the same tiles, persistent."""
        return WarpSpecializedConfig(self.BM, self.CONSUMERS, self.STAGES, self.ROUND, PERSISTENT=1)

    def validate(self) -> None:
        self._rule(self.SK_WAVES in (0, 1, 2), f"SK_WAVES = {self.SK_WAVES} must be 0 (every tile whole), 1 (the "
                                               "last, part-empty wave shared out) or 2 (and one whole wave more).")
        self._rule(self.SLICES == 0 or (self.SLICES >= 2 and self.SK_WAVES == 1),
                   f"SLICES = {self.SLICES} must be 0 (one block per SM) or, with SK_WAVES = 1, 2 or more blocks per "
                   f"tile (SK_WAVES = {self.SK_WAVES}).")
        try:
            self.tiles_config()
        except ValueError as e:   # 12's rules, named with this configuration
            self._rule(False, str(e).split("): ", 1)[-1])

    @property
    def BN(self) -> int:
        return 64 * self.CONSUMERS

    def label(self) -> str:
        """The fields, SLICES only where it is set (the labels of one block per SM stay as they were)."""
        return super().label().replace(", SLICES=0", "")

    def check_shape(self, M: int, N: int, K: int) -> None:
        """The kernel keeps its run of stream-K iterations in ints: every tile's k-tiles together under 2^31 (true
        wherever A, B and C fit the kernels' int indices; checked, not assumed)."""
        if self.tiles(M, N) * ceil_div(K, self.BK) >= 2**31:
            raise ValueError(f"{type(self).__name__}({self.label()}): {M}x{N}x{K} has {self.tiles(M, N)} tiles of "
                             f"{ceil_div(K, self.BK)} k-tiles, 2^31 or more iterations, which the kernel counts in an int.")

    def threads(self) -> int:
        return (self.CONSUMERS + 1) * 128

    def shared_bytes(self) -> int:
        return self.tiles_config().shared_bytes()

    def static_shared_bytes(self) -> int:
        return self.tiles_config().static_shared_bytes()

    def template_args(self):
        return (self.BM, self.CONSUMERS, self.STAGES, self.SK_WAVES)

    def block(self):
        return (self.threads(), 1, 1)

    def tiles(self, M: int, N: int) -> int:
        return ceil_div(M, self.BM) * ceil_div(N, self.BN)

    def grid(self, M, N):
        return (self.tiles(M, N), 1, 1)

    def launch_grid(self, M: int, N: int, sm_count: int | None) -> tuple[int, int, int]:
        """One block per SM (G = sm_count), also where there are fewer tiles, whose k-tiles stream-K then shares
        out; with SK_WAVES = 0, as 12's persistent grid, no more blocks than tiles; with SLICES = S, S per tile."""
        if self.SLICES:
            return (self.tiles(M, N) * self.SLICES, 1, 1)
        if not sm_count:
            return self.grid(M, N)
        return (min(self.tiles(M, N), sm_count) if self.SK_WAVES == 0 else sm_count, 1, 1)

    def sk_tiles(self, M: int, N: int, ctas: int) -> int:
        """How many tiles (the last ones) stream-K shares out among `ctas` blocks: the kernel's
        stream_k_tiles(), the same rule."""
        tiles = self.tiles(M, N)
        return 0 if self.SK_WAVES == 0 else min(tiles, tiles % ctas + (self.SK_WAVES - 1) * ctas)

    def parts(self, M: int, N: int, K: int, ctas: int) -> int:
        """How many parts of tiles the blocks write to the workspace (and fixup_stream_k reads back): for each
        shared tile, the blocks whose runs hold some of its k-tiles, where more than one does."""
        sk, num_k = self.sk_tiles(M, N, ctas), ceil_div(K, self.BK)
        total = sk * num_k
        start = [total * b // ctas for b in range(ctas + 1)]
        count = 0
        for s in range(sk):
            first, last = s * num_k, s * num_k + num_k - 1
            b0, b1 = ((first + 1) * ctas - 1) // total, ((last + 1) * ctas - 1) // total
            if b1 > b0:
                count += sum(1 for b in range(b0, b1 + 1) if start[b] < start[b + 1])
        return count

    def workspace_floats(self, M: int, N: int, sm_count: int | None = None) -> int | None:
        """Two tiles' raw sums per block where some tiles are shared (0: none are; a one-float array is passed)."""
        ctas = self.launch_grid(M, N, sm_count)[0]
        return 2 * ctas * self.BM * self.BN if self.sk_tiles(M, N, ctas) else 0

    def finish(self, M: int, N: int, K: int, sm_count: int | None) -> tuple[str, tuple, tuple, tuple]:
        """fixup_stream_k's launch: (name expression, grid, block, its arguments before alpha)."""
        ctas = self.launch_grid(M, N, sm_count)[0]
        per_tile = ceil_div(self.BM * self.BN, 4 * self.FINISH_THREADS)
        return (f"fixup_stream_k<{self.BM}, {self.CONSUMERS}, {self.SK_WAVES}>",
                (per_tile, self.sk_tiles(M, N, ctas), 1), (self.FINISH_THREADS, 1, 1), (M, N, K, ctas))

    def tensor_maps(self, M: int, N: int, K: int) -> tuple[TensorMapBox, TensorMapBox]:
        return self.tiles_config().tensor_maps(M, N, K)
