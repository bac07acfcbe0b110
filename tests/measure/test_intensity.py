"""Arithmetic-intensity models: every registered kernel has one, and its counts are right
(hand-derived values, and an independent count that walks every thread of small launches)."""

import math
from fractions import Fraction

import pytest

from helpers.measure import intensity
from helpers.core import stages
from helpers.core.configs import CoalescedConfig, NaiveConfig, TileConfig

SHAPES = [(1, 1, 1), (5, 7, 3), (33, 100, 7), (64, 64, 64), (67, 61, 53), (4096, 4096, 4096)]


@pytest.mark.parametrize("v", stages.variants(), ids=lambda v: v.name)
def test_every_registered_variant_has_a_model_and_a_formula(v):
    assert v.name in intensity.MODELS, f"add an intensity model for {v.name} to helpers/intensity.py"
    assert v.name in intensity.FORMULAS, f"add the formulas of {v.name} to helpers/intensity.FORMULAS"
    text = intensity.formula(v.name)
    assert text.startswith(v.name) and "dram" in text and "ideal" in text and "smem" in text
    for M, N, K in SHAPES:
        r = intensity.intensity(v, M, N, K)
        assert r.flops == 2 * M * N * K
        assert r.ideal_bytes == 4 * (M * K + K * N + 2 * M * N)
        # no kernel moves less than each matrix once; requests count every load, cached or not
        assert r.ideal_bytes <= r.dram_bytes <= r.request_bytes
        assert r.ideal >= r.dram >= r.requests > 0


def test_unknown_variant_has_no_model():
    with pytest.raises(KeyError, match="no intensity model"):
        intensity.model("99_future_kernel")


def test_hand_values_at_4096_with_32x32_blocks():
    # block model: 2K / 4(2K/32 + 2) = 8192 / 1032 = 1024/129 FLOP/B, the same for both stage 02
    # kernels and for 03 with TILE = 32 (each block reads its panels once in all three)
    for name in ("02_naive", "02_naive_coalesced", "03_smem_tiling"):
        r = intensity.intensity(name, 4096, 4096, 4096)
        assert r.dram_bytes == 4 * 4096**2 * 258
        assert Fraction(r.flops, r.dram_bytes) == Fraction(1024, 129)
        assert r.ideal == pytest.approx(512.0)       # 2N^3 / 16N^2 = N/8
    naive = intensity.intensity("02_naive", 4096, 4096, 4096)
    assert Fraction(naive.flops, naive.request_bytes) == Fraction(8192, 4 * 8194)   # about 0.25
    assert naive.smem is None and naive.smem_bytes is None
    tiled = intensity.intensity("03_smem_tiling", 4096, 4096, 4096)
    assert tiled.request_bytes == tiled.dram_bytes
    assert tiled.smem == 0.25                        # 2 loads of 4 bytes per multiply-add


def test_tile_size_sets_the_dram_intensity():
    r = intensity.intensity("03_smem_tiling", 4096, 4096, 4096, TileConfig(16))
    assert Fraction(r.flops, r.dram_bytes) == Fraction(8192, 4 * (512 + 2))      # about 3.98
    assert r.smem == 0.25


def test_edges_count_only_what_exists():
    # 33^3 with TILE 32: 2 x 2 blocks; A and B panels read twice each, C read and written once
    r = intensity.intensity("03_smem_tiling", 33, 33, 33)
    assert r.dram_bytes == 4 * 33 * 33 * 6
    assert r.dram == pytest.approx(2 * 33 / 24)      # 2.75
    # every thread of the 64 x 64 padded grid runs 64 steps of 2 shared loads
    assert r.smem_bytes == 64 * 64 * 64 * 2 * 4
    # stage 02 on 33 x 100 x 7, block (32, 4): the two mappings swap which side a block covers
    n = intensity.intensity("02_naive", 33, 100, 7, NaiveConfig(32, 4))
    c = intensity.intensity("02_naive_coalesced", 33, 100, 7, CoalescedConfig(32, 4))
    assert n.dram_bytes == 4 * (33 * 7 * 25 + 7 * 100 * 2 + 2 * 33 * 100)     # 55100
    assert c.dram_bytes == 4 * (33 * 7 * 4 + 7 * 100 * 9 + 2 * 33 * 100)      # 55296
    assert n.request_bytes == c.request_bytes == 4 * 33 * 100 * (2 * 7 + 2)


# ---- an independent count: walk every thread of a small launch ---------------------------------
def _walk(variant, config, M, N, K):
    """Per block: the distinct A/B/C elements its threads touch in global memory; in total: every
    global load/store and every shared load, following the kernels' index lines."""
    gx, gy, _ = config.grid(M, N)
    bx, by, _ = config.block()
    panel = requests = smem = 0
    for bid_y in range(gy):
        for bid_x in range(gx):
            touched = set()
            for ty in range(by):
                for tx in range(bx):
                    if variant == "02_naive":
                        row, col = bid_x * bx + tx, bid_y * by + ty
                    else:
                        row, col = bid_y * by + ty, bid_x * bx + tx
                    if variant == "03_smem_tiling":
                        T = config.tile
                        for k0 in range(0, K, T):
                            if row < M and k0 + tx < K:
                                touched.add(("A", row, k0 + tx))
                                requests += 1
                            if k0 + ty < K and col < N:
                                touched.add(("B", k0 + ty, col))
                                requests += 1
                            smem += 2 * T
                        if row < M and col < N:
                            touched |= {("C", row, col, "r"), ("C", row, col, "w")}
                            requests += 2
                    elif row < M and col < N:
                        for k in range(K):
                            touched |= {("A", row, k), ("B", k, col)}
                        touched |= {("C", row, col, "r"), ("C", row, col, "w")}
                        requests += 2 * K + 2
            panel += len(touched)
    return 4 * panel, 4 * requests, 4 * smem


@pytest.mark.parametrize("name,config", [
    ("02_naive", NaiveConfig(2, 3)), ("02_naive", NaiveConfig(4, 1)),
    ("02_naive_coalesced", CoalescedConfig(2, 3)), ("02_naive_coalesced", CoalescedConfig(1, 4)),
    ("03_smem_tiling", TileConfig(2)), ("03_smem_tiling", TileConfig(3)), ("03_smem_tiling", TileConfig(4)),
])
@pytest.mark.parametrize("M,N,K", [(5, 7, 3), (4, 4, 4), (7, 5, 9), (1, 6, 2)])
def test_models_match_a_walk_over_every_thread(name, config, M, N, K):
    r = intensity.intensity(name, M, N, K, config)
    panel, requests, smem = _walk(name, config, M, N, K)
    assert r.dram_bytes == panel
    assert r.request_bytes == requests
    assert (r.smem_bytes or 0) == smem


def test_bad_arguments():
    with pytest.raises(ValueError, match="M must be"):
        intensity.intensity("02_naive", 0, 4, 4)
    with pytest.raises(TypeError, match="TileConfig"):
        intensity.intensity("03_smem_tiling", 4, 4, 4, NaiveConfig())
    with pytest.raises(ValueError, match="level"):
        intensity.intensity("02_naive", 4, 4, 4).level("l1")


def test_rows_for_a_table():
    rows = dict(intensity.intensity("03_smem_tiling", 64, 64, 64).rows())
    assert set(rows) == set(intensity.LEVELS)
    assert rows["smem"].startswith("0.25 FLOP/B")
    assert dict(intensity.intensity("02_naive", 64, 64, 64).rows())["smem"] == "none"
    assert math.isclose(intensity.panel_bytes(64, 64, 64, 32, 32), 4 * (64 * 64 * 2 * 2 + 2 * 64 * 64))
