"""Stage 11's stream-K (11_stream_k) without running it: its configuration's rules, and the schedule its blocks walk
(measure.stream_k.pieces, the kernel's rule in Python): every k-tile of every tile dealt exactly once, every block the
same share of the shared tiles, the parts the workspace holds, the fix-up's launch. The kernel itself is verified on
the emulator in tests/stages/test_every_kernel.py and tests/run/test_sgemm_library.py."""

import dataclasses

import pytest

from helpers.core.configs import ceil_div
from helpers.core.configs_stream_k import StreamKConfig
from helpers.measure import stream_k

SHAPES = [(512, 512, 16384), (1000, 1000, 8000), (4096, 4096, 4096), (13, 11, 1031), (1531, 765, 69), (1, 1, 1)]


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("config", [StreamKConfig(), StreamKConfig(SK_WAVES=2), StreamKConfig(SK_WAVES=0),
                                    StreamKConfig(128, 1, 3), StreamKConfig(SLICES=5), StreamKConfig(128, 2, 4, SLICES=3)],
                         ids=lambda c: c.label())
def test_every_k_tile_of_every_tile_is_dealt_once(M, N, K, config):
    ctas = config.launch_grid(M, N, 132)[0]
    num_k = ceil_div(K, config.BK)
    dealt = {}
    for b in range(ctas):
        for t, k0, k1 in stream_k.pieces(M, N, K, config, ctas, b):
            assert 0 <= k0 < k1 <= num_k
            for k in range(k0, k1):
                assert (t, k) not in dealt, f"k-tile {k} of tile {t} dealt to blocks {dealt[(t, k)]} and {b}"
                dealt[(t, k)] = b
    assert len(dealt) == config.tiles(M, N) * num_k
    sk = config.sk_tiles(M, N, ctas)
    shared = {}
    for (t, k), b in dealt.items():
        if t >= config.tiles(M, N) - sk:
            shared[b] = shared.get(b, 0) + 1
    if sk:   # the shared tiles' iterations: each block floor or ceil of its share
        share = sk * num_k / ctas
        assert all(int(share) <= shared.get(b, 0) <= -(-sk * num_k // ctas) for b in range(ctas))
    # a part is a piece that is not a whole tile: what the workspace holds and the fix-up reads back
    parts = sum(1 for b in range(ctas) for t, k0, k1 in stream_k.pieces(M, N, K, config, ctas, b) if (k0, k1) != (0, num_k))
    assert parts == config.parts(M, N, K, ctas)
    assert (config.workspace_floats(M, N, 132) > 0) == (sk > 0)


def test_the_last_wave_is_shared_and_whole_waves_are_walked_whole():
    c = StreamKConfig()
    assert c.tiles(4096, 4096) == 512 and c.sk_tiles(4096, 4096, 132) == 512 % 132
    assert dataclasses.replace(c, SK_WAVES=2).sk_tiles(4096, 4096, 132) == 512 % 132 + 132
    assert dataclasses.replace(c, SK_WAVES=0).sk_tiles(4096, 4096, 132) == 0
    assert c.sk_tiles(512, 512, 132) == 8               # fewer tiles than SMs: all shared
    assert c.sk_tiles(256 * 12, 128 * 11, 132) == 0     # 132 tiles: one whole wave, nothing to share
    name, grid, block, ints = c.finish(512, 512, 16384, 132)
    assert name == "fixup_stream_k<256, 2, 1>" and grid == (32, 8, 1) and block == (256, 1, 1)
    assert ints == (512, 512, 16384, 132)
    assert c.launch_grid(512, 512, 132) == (132, 1, 1)
    assert dataclasses.replace(c, SK_WAVES=0).launch_grid(512, 512, 132) == (8, 1, 1)   # 12's persistent grid


@pytest.mark.parametrize("M, N, K, slices", [(512, 512, 16384, 16), (640, 640, 12288, 8), (13, 11, 1031, 7), (257, 193, 139, 3)])
def test_slices_are_split_k_every_run_one_slice_of_one_tile(M, N, K, slices):
    # G = tiles x S blocks: block s S + j takes k-tiles [j numK / S, (j + 1) numK / S) of tile s, and nothing else
    config = StreamKConfig(SLICES=slices)
    tiles, num_k = config.tiles(M, N), ceil_div(K, config.BK)
    ctas = config.launch_grid(M, N, 132)[0]
    assert ctas == tiles * slices and config.sk_tiles(M, N, ctas) == tiles
    for b in range(ctas):
        s, j = divmod(b, slices)
        assert stream_k.pieces(M, N, K, config, ctas, b) == [(s, j * num_k // slices, (j + 1) * num_k // slices)]
    assert config.parts(M, N, K, ctas) == ctas
    name, grid, _, ints = config.finish(M, N, K, 132)
    assert grid[1] == tiles and ints[-1] == ctas and config.label().endswith(f"SK_WAVES=1, SLICES={slices}")
    assert StreamKConfig().label().endswith("SK_WAVES=1")   # one block per SM: the label as before


def test_the_iterations_must_fit_an_int():
    StreamKConfig().check_shape(46340, 46340, 46340)   # every matrix at the kernels' int limit: 3.8e8 iterations
    with pytest.raises(ValueError, match="2\\^31 or more iterations"):
        StreamKConfig().check_shape(2**20, 2**20, 2**20)


@pytest.mark.parametrize("changes, words", [({"SK_WAVES": 3}, "SK_WAVES = 3"), ({"BM": 64}, "BM = 64 must be 128 or 256"),
                                            ({"STAGES": 9}, "a block has at most 227"), ({"SLICES": 1}, "SLICES = 1"),
                                            ({"SLICES": 4, "SK_WAVES": 2}, "with SK_WAVES = 1")])
def test_a_broken_rule_is_named_with_this_configuration(changes, words):
    with pytest.raises(ValueError, match=words) as e:
        StreamKConfig(**changes)
    assert str(e.value).startswith("StreamKConfig(")
