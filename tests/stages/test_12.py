"""Stage 12 (12_warp_specialized) on the emulator: TMA tensor maps checked as the driver does, the copy engine's
TF32 rounding, the pipeline read from the kernel's own trace, and the race check that knows mbarriers. The
catalogue of every configuration runs in test_every_kernel.py; the GPU's side is in test_12_gpu.py."""

import dataclasses
import re
import struct

import numpy as np
import pytest

from helpers.core import results_files, stages
from helpers.core.configs_hopper import TensorMapBox, WarpSpecializedConfig as WS
from helpers.core.errors import BarrierError, KernelArgumentError, KernelCrashError
from helpers.emulator.tensor_map import MAGIC, TensorMapArg
from helpers.measure import hopper, memory, verify
from helpers.measure.facts import notebook_12
from helpers.run import cpu_backend, gemm, tensor_maps
from helpers.run.kernel_loader import load_kernel

pytestmark = pytest.mark.emulator

V = stages.variant("12_warp_specialized")
SMALL = WS(BM=128, CONSUMERS=1, STAGES=3)


def _tf32(x: np.ndarray, nearest: bool) -> np.ndarray:
    """x with its low 13 mantissa bits rounded to nearest, ties to even (as a TF32 tensor map), or dropped."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if nearest:
        u = u + 0xFFF + ((u >> 13) & 1)
    return (u & 0xFFFFE000).astype(np.uint32).view(np.float32)


# ---- tensor maps ---------------------------------------------------------------------------------------------
def test_the_emulators_map_names_its_array_and_box():
    A = np.zeros((70, 36), np.float32)
    m = cpu_backend.tensor_map(A, TensorMapBox(70, 33, 128, 32, tf32=True), 36)
    assert isinstance(m, TensorMapArg) and m.is_tensor_map
    raw = m.encode(5)
    assert len(raw) == 128
    assert struct.unpack_from("<IIQQQIIII", raw) == (MAGIC, 5, 70, 33, 144, 128, 32, 1, 128)


@pytest.mark.parametrize("box, pitch, address, rule", [
    (TensorMapBox(64, 64, 64, 32), 63, 0, "multiple of 16 bytes"),
    (TensorMapBox(64, 64, 64, 32), 64, 8, "16-byte boundary"),
    (TensorMapBox(512, 64, 512, 32), 64, 0, "1 to 256 elements"),
    (TensorMapBox(64, 64, 64, 64), 64, 0, "at most 128 bytes"),
    (TensorMapBox(64, 64, 64, 6), 64, 0, "multiple of 16 bytes"),  # a box row of 24 bytes
])
def test_a_map_the_driver_would_refuse_is_refused_naming_the_rule(box, pitch, address, rule):
    with pytest.raises(KernelArgumentError, match=rule):
        tensor_maps.check(box, pitch, address, "A")


def test_rows_not_16_byte_aligned_are_copied_to_a_padded_pitch_the_map_does_not_read():
    a = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    out, pitch = tensor_maps.pitched(a, 5, 7, np)
    assert pitch == 8 and out.shape == (5, 8) and np.array_equal(out[:, :7], a)
    same, p = tensor_maps.pitched(np.zeros((3, 8), np.float32), 3, 8, np)
    assert p == 8 and same.shape == (3, 8)
    mA, mB, keep = tensor_maps.operand_maps(SMALL, 5, 9, 7, a, np.zeros((7, 9), np.float32), cpu_backend)
    assert (mA.rows, mA.cols, mA.pitch_floats, mA.box_rows, mA.box_cols) == (5, 7, 8, 128, 32)
    assert (mB.rows, mB.cols, mB.pitch_floats, mB.box_rows, mB.box_cols) == (7, 9, 12, 32, 32)
    assert len(keep) == 2


def test_a_pointer_where_a_map_belongs_is_refused_before_the_kernel_runs(cpu_backend, rng):
    k = load_kernel(V.path, V.name_expression(SMALL))
    A, B, C = (np.zeros(s, np.float32) for s in ((128, 32), (32, 64), (128, 64)))
    with pytest.raises(KernelArgumentError, match="TMA tensor map"):
        k(SMALL.grid(128, 64), SMALL.block(), gemm.launch_args(128, 64, 32, 1.0, A, B, 0.0, C), SMALL.shared_bytes())


def test_a_persistent_grid_is_one_block_per_sm_at_most():
    assert WS().launch_grid(4096, 4096, 132) == (132, 1, 1)
    assert WS().launch_grid(256, 256, 132) == (2, 1, 1)
    assert WS(PERSISTENT=0).launch_grid(4096, 4096, 132) == (16 * 32, 1, 1)


def test_clusters_launch_whole_pairs_of_tiles_through_their_own_entry():
    c = WS(CLUSTER=2)
    assert c.label().endswith("CLUSTER=2") and "CLUSTER" not in WS().label()
    assert V.name_expression(c) == "sgemm_warp_specialized_cluster<256, 2, 4, 0, 0, 2>"
    assert V.name_expression(WS()) == "sgemm_warp_specialized<256, 2, 4>"
    # 2 tile rows, 5 tile columns of 128 (N = 600): 3 pairs a tile row, the last one's second block without a tile
    assert c.grid(512, 600) == (2 * 3 * 2, 1, 1) and WS(CLUSTER=2, PERSISTENT=0).launch_grid(512, 600, 132)[0] == 12
    assert c.launch_grid(4096, 4096, 132) == (132, 1, 1) and c.launch_grid(4096, 4096, 131) == (130, 1, 1)
    assert c.tensor_maps(512, 512, 64)[0].box_rows == 128 and WS().tensor_maps(512, 512, 64)[0].box_rows == 256
    with pytest.raises(ValueError, match="CLUSTER = 3"):
        WS(CLUSTER=3)


# ---- what the copy engine delivers ------------------------------------------------------------------------------
@pytest.mark.parametrize("round_", [0, 1])
def test_the_copy_engine_rounds_to_nearest_tf32_only_when_the_map_says_tf32(cpu_backend, rng, round_):
    M, N, K = 130, 70, 45   # edges in every direction, K and N not multiples of 4 (padded pitch)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = gemm.run(V, A, B, np.full((M, N), np.nan, np.float32), config=WS(128, 1, 3, ROUND=round_))
    nearest = bool(round_)
    want = _tf32(A, nearest).astype(np.float64) @ _tf32(B, nearest).astype(np.float64)
    other = _tf32(A, not nearest).astype(np.float64) @ _tf32(B, not nearest).astype(np.float64)
    err, err_other = np.abs(C - want).max(), np.abs(C - other).max()
    assert err < 1e-5 < err_other, (err, err_other)   # FP32 sums of exactly those inputs, not of the others


def test_beta_zero_never_reads_c_and_each_element_is_written_once(cpu_backend, rng):
    report = verify.check_catalogue(V, SMALL)
    assert report.ok, str(report)


@pytest.mark.parametrize("round_", [0, 1])
def test_the_catalogue_passes_on_same_sign_data_truncated_or_rounded(cpu_backend, round_):
    """U[0, 1): truncation's errors all go one way and grow like K (verify.py's bias term); rounding's do not."""
    report = verify.check_catalogue(V, WS(128, 1, 3, ROUND=round_), positive=True)
    assert report.ok, str(report)


# ---- the pipeline, from the kernel's own trace -------------------------------------------------------------------
def test_the_ring_holds_a_copy_until_every_consumer_gave_its_stage_back():
    cfg = WS(BM=128, CONSUMERS=2, STAGES=3)
    p = hopper.kernel_pipeline(V, cfg, M=128, N=128, K=256)
    t = p.per_k_tile()
    assert list(t["k-tile"]) == list(range(8)) and list(t["stage"]) == [k % 3 for k in range(8)]
    for k in range(8):
        row = t.iloc[k]
        for wg in (1, 2):
            assert row["copies issued at"] < row[f"WG{wg} waited at"] < row[f"WG{wg} gave back at"]
        if k >= 3:   # k-tile k reuses k-3's stage: issued only once both consumers gave it back
            before = t.iloc[k - 3]
            assert row["copies issued at"] > max(before["WG1 gave back at"], before["WG2 gave back at"])
    copies = p.events[p.events["event"] == "copy issued"]
    calls = {i for i, text in enumerate(V.path.read_text().splitlines(), 1) if "tma_load_2d(" in text}
    assert len(copies) == 8 * (1 + cfg.BN // 32) and set(copies["line"]) == calls and len(calls) == 2


def test_the_correct_kernel_has_no_race():
    from helpers.measure import memory, trace
    tr = trace.capture_variant(V, SMALL, 256, 128, 160, blocks=(0,))
    assert memory.races(tr) == []


# which wait each race names as missing, whichever of its two accesses the emulator ran first (notebook 12's cell of
# the two races printed them swapped against their labels when the story followed the order of the accesses)
MISSING_WAIT = {"the producer's wait for an empty stage": (memory.COPY_TOO_EARLY, "did not wait for the reader"),
                "the consumers' wait for the copies": (memory.NO_WAIT_FOR_COPY, "without having waited (mbarrier_wait)")}


@pytest.mark.parametrize("what", list(hopper.BROKEN))
def test_taking_out_a_wait_is_a_race_naming_the_copy_the_load_and_the_missing_wait(what):
    races = hopper.broken_pipeline(what)
    assert len(races) == 1
    r = races[0]
    lines = {r.first[1], r.second[1]}
    text = V.path.read_text().splitlines()
    copy_line, load_line = sorted(lines)
    assert "tma_load_2d" in text[copy_line - 1] and "reinterpret_cast<const float2*>" in text[load_line - 1]
    assert "copy engine write" in (r.first[2], r.second[2]) and "barrier" in str(r)
    cause, words = MISSING_WAIT[what]
    assert r.cause == cause and words in str(r)
    other = next(w for k, (_, w) in MISSING_WAIT.items() if k != what)
    assert other not in str(r)


# ---- ping-pong (PINGPONG = 1): each consumer warpgroup a tile of its own, in turn ----------------------------------
PP = WS(BM=128, CONSUMERS=2, STAGES=3, PINGPONG=1)


def test_pingpong_tiles_are_one_consumers_64_columns_and_a_block_takes_two_at_a_time():
    assert (PP.BN, WS(PINGPONG=1).BN, WS().BN) == (64, 64, 128)
    assert WS(PINGPONG=1, STAGES=WS.PINGPONG_STAGES).shared_bytes() == 5 * (256 + 64) * 32 * 4 + 1024 <= 227 * 1024
    assert WS(PINGPONG=1, PERSISTENT=0).launch_grid(4096, 4096, 132) == (16 * 64 // 2, 1, 1)
    assert WS(PINGPONG=1).launch_grid(4096, 4096, 132) == (132, 1, 1)
    assert WS(PINGPONG=1).template_args() == (256, 2, 4, 0, 1, 1) and WS().template_args() == (256, 2, 4)
    with pytest.raises(ValueError, match="ping-pong needs two consumer warpgroups"):
        WS(128, 1, 3, PINGPONG=1)


@pytest.mark.parametrize("config", [dataclasses.replace(PP, PERSISTENT=0), WS(PINGPONG=1, STAGES=WS.PINGPONG_STAGES,
                                                                               PERSISTENT=0)], ids=["128", "256"])
def test_pingpong_passes_the_catalogue(cpu_backend, config):
    """A block per two tiles, so that both consumers work on the catalogue's shapes (a persistent grid of the 132
    emulated SMs gives them a tile each); beta = 0 on poisoned C and beta != 0 are both in the catalogue."""
    report = verify.check_catalogue(V, config)
    assert report.ok, str(report)


def test_pingpong_blocks_walking_several_tiles_compute_every_tile(cpu_backend, rng):
    """Persistent blocks walking three or four tiles each (the turn barriers through two phases), partial tiles at
    both edges, beta != 0 (the catalogue above has beta = 0 on poisoned C)."""
    check = verify.check(V, verify.Shape("3-4 tiles a block", 128 * 3 + 37, 64 * 120 + 5, 170, 0.5, 1.5), PP, rng)
    assert check.ok, check.details()


def test_pingpong_alternates_the_consumers_and_one_multiplies_while_the_other_finishes():
    """Block 0 walking four tiles, traced: no race; each tile's k-tiles read by one consumer, tiles alternating
    between them; their products never interleave; and between a consumer's last k-tile of a tile and its next
    tile's first, the other consumer waits for all of its own tile's k-tiles (its products while this one completes
    and writes C), whatever the emulator's order: the turn barriers force it."""
    from helpers.measure import trace
    M, N, K = hopper.walk_shape(PP, 4, K=160)
    tr = trace.capture_variant(V, PP, M, N, K, blocks=(0,))
    assert memory.races(tr) == []
    p = hopper.pipeline_events(tr, PP.STAGES, k_tiles=5)
    k = p.per_k_tile()
    assert list(k["tile"]) == [i // 5 for i in range(20)]
    for tile in range(4):
        mine, other = f"WG{1 + tile % 2}", f"WG{2 - tile % 2}"
        rows = k[k["tile"] == tile]
        assert rows[f"{mine} waited at"].notna().all() and rows[f"{other} waited at"].isna().all()
    t = p.per_tile()
    assert list(t["consumer"]) == ["WG1", "WG2", "WG1", "WG2"] and list(t["k-tiles"]) == [5] * 4
    assert (t["first k-tile waited at"].iloc[1:].to_numpy() > t["last k-tile waited at"].iloc[:-1].to_numpy()).all()
    assert list(t["other k-tiles meanwhile"].iloc[:2]) == [5, 5]
    coop = hopper.kernel_pipeline(V, WS(BM=128, CONSUMERS=2, STAGES=3), *hopper.walk_shape(WS(128, 2, 3), 2, K=160))
    assert list(coop.per_tile()["consumer"]) == ["WG1", "WG2", "WG1", "WG2"]   # both consumers on every tile


# ---- mbarrier misuse on the emulator: named, with the line and the fix --------------------------------------------
MISUSE = r"""
#include "tma.cuh"
__global__ void misuse(int mode, float* out) {
  __shared__ unsigned long long bar[1];
  if (mode != 0 && threadIdx.x == 0) mbarrier_init(&bar[0], 1);
  __syncthreads();
  if (mode == 2) {
    mbarrier_wait(&bar[0], 0);  // nobody arrives
  } else {
    mbarrier_arrive_expect_tx(&bar[0], 16);  // 16 bytes announced, no copy issued
    if (mode == 1) mbarrier_arrive(&bar[0]);  // an arrival more than the count (1), the bytes still missing
  }
  out[threadIdx.x] = 1.0f;
}
"""


@pytest.fixture
def misuse_kernel(tmp_path):
    from helpers.core.paths import KERNELS
    (tmp_path / "tma.cuh").write_text((KERNELS / "tma.cuh").read_text())
    path = tmp_path / "misuse.cu"
    path.write_text(MISUSE)
    return load_kernel(path, "misuse")


def test_a_barrier_never_initialized_is_named(cpu_backend, misuse_kernel):
    with pytest.raises(KernelCrashError, match=r"(?s)no mbarrier_init.*misuse.cu:10"):
        misuse_kernel((1, 1, 1), (1, 1, 1), (np.int32(0), np.zeros(1, np.float32)))


def test_a_wait_no_arrival_completes_is_a_deadlock_naming_the_wait(cpu_backend, misuse_kernel):
    with pytest.raises(BarrierError, match=r"waits at mbarrier_wait \(line 8\)"):
        misuse_kernel((1, 1, 1), (32, 1, 1), (np.int32(2), np.zeros(32, np.float32)))


def test_more_arrivals_than_the_count_are_named(cpu_backend, misuse_kernel):
    with pytest.raises(KernelCrashError, match="already has all its 1 arrivals and still waits for 16 announced bytes"):
        misuse_kernel((1, 1, 1), (1, 1, 1), (np.int32(1), np.zeros(1, np.float32)))


def test_the_pipeline_plots_labels_of_the_copies_do_not_overlap():
    """Notebook 12's pipeline plot printed k0, k1 and k2 over each other: the first round's copies are issued a few
    events apart."""
    import matplotlib
    matplotlib.use("Agg")
    from helpers.views import hopper_plots
    p = hopper.kernel_pipeline(V, WS(BM=128, CONSUMERS=2, STAGES=3), M=128, N=128, K=256)
    fig = hopper_plots.plot_pipeline(p)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if re.fullmatch(r"k\d+", t.get_text())]
    assert len(labels) == 8
    boxes = [t.get_window_extent(renderer) for t in labels]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)


def test_the_tma_rounding_probe_reads_the_emulators_model_back(cpu_backend):
    """tools/experiments/probe_tma_tf32.py, run on the emulator, must find the models the emulator implements (TF32
    maps round to nearest, ties to even; the tensor cores drop an FP32 input's low 13 bits; cvt.rna rounds ties away):
    so that on a GPU its verdicts mean what they say. Its inputs hold ties that separate the three roundings."""
    from helpers.run import backend
    from tools.experiments import probe_tma_tf32 as probe
    bk = backend.current()
    src = probe.inputs()
    ties = (src & probe.LOW) == 0x1000
    assert ties.sum() >= 32 and not (probe.nearest_even(src) == probe.nearest_away(src))[ties].all()
    landed, rna, tensor = probe.run(bk, src, tf32=True)
    assert probe.verdict(landed, src)["verdict"] == "ties to even"
    assert probe.verdict(tensor, src, probe.tensor_mask(src, landed))["verdict"] == "ties to even"
    assert probe.verdict(rna, src)["verdict"] == "ties away (cvt.rna)"
    landed, _, tensor = probe.run(bk, src, tf32=False)
    assert probe.verdict(landed, src)["verdict"] == "unchanged"
    assert probe.verdict(tensor, src, probe.tensor_mask(src, landed))["verdict"] == "truncation"


def test_the_emulators_tf32_models_are_what_an_h100_did(cpu_backend):
    """The same probe on an H100 (results/stage_10_12_h100_2026-11-27_beta/probe_tma_tf32.json, notebook 12 section 5):
    the emulator's verdicts are the GPU's for both maps, where they landed and what the tensor cores multiplied, both
    find cvt.rna rounding every tie away from zero, and every input the GPU run recorded as separating the models
    (ties and their neighbours) comes out of the emulator with the GPU's bits."""
    from helpers.run import backend
    from tools.experiments import probe_tma_tf32 as probe
    gpu = results_files.read_json(notebook_12.TMA_PROBE)
    assert gpu["backend"] == "gpu" and gpu["provenance"]["gpu"].startswith("NVIDIA H100")
    src = probe.inputs()
    assert gpu["cases"] == src.size
    columns = {}
    for tf32, kind in ((True, "TF32 map"), (False, "FP32 map")):
        landed, rna, tensor = probe.run(backend.current(), src, tf32=tf32)
        here = {"landed in shared memory": probe.verdict(landed, src),
                "what the tensor cores multiplied": probe.verdict(tensor, src, probe.tensor_mask(src, landed))}
        for where, v in here.items():
            assert v["verdict"] == gpu[kind][where]["verdict"], (kind, where, v["verdict"], gpu[kind][where]["verdict"])
        columns[f"{kind}: landed"], columns[f"{kind}: tensor cores"] = landed, tensor
    columns["cvt.rna"] = rna
    away = "ties away (cvt.rna)"
    assert probe.verdict(rna, src)[away]["ties"] and gpu["cvt.rna (__float_to_tf32)"][away]["ties"]
    index = {int(u): i for i, u in enumerate(src.ravel())}
    cases = gpu["separating cases"]
    assert len(cases) >= 64
    for case in cases:
        i = index[int(case["input"], 16)]
        for column, bits in columns.items():
            assert f"{int(bits.ravel()[i]):08x}" == case[column], (case["input"], column, case[column])


# ---- EPILOGUE = 1: C through shared memory, stored by TMA --------------------------------------------------------
STORE = WS(BM=128, CONSUMERS=1, STAGES=3, EPILOGUE=1)
# N a multiple of 4 (C's map needs rows 16-byte aligned) and no side a multiple of a tile; beta 0 on poisoned C
STORE_SHAPES = (verify.Shape("odd, N % 4 = 0", 257, 196, 139), verify.Shape("one row", 1, 68, 33),
                verify.Shape("beta = 0 (poisoned C), N % 4 = 0", 131, 4, 45, alpha=1.0, beta=0.0),
                verify.Shape("two tiles of rows, long K", 300, 200, 1000, alpha=0.5, beta=2.0))


@pytest.mark.slow
@pytest.mark.parametrize("config", [STORE, WS(BM=256, CONSUMERS=2, STAGES=2, EPILOGUE=1)], ids=lambda c: c.label())
def test_the_tma_store_epilogue_is_right_on_odd_shapes(cpu_backend, config):
    assert all(config.for_output(s.N, 0) is config for s in STORE_SHAPES)   # every shape stores through TMA
    report = verify.check_catalogue(V, config, shapes=STORE_SHAPES)
    assert report.ok, str(report)


@pytest.mark.parametrize("N, offset, stores", [(196, 0, True), (193, 0, False), (196, 4, False)])
def test_where_no_map_can_describe_c_the_host_launches_the_register_epilogue(N, offset, stores):
    assert (STORE.for_output(N, 4096 + offset).EPILOGUE == 1) == stores
    assert STORE.for_output(N, 4096 + offset).BM == STORE.BM and WS().for_output(N, offset) == WS()


@pytest.mark.slow
def test_a_c_that_starts_off_a_16_byte_boundary_is_right_through_the_register_epilogue(cpu_backend, rng):
    M, N, K = 130, 68, 40
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C0 = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    C = np.empty(M * N + 1, np.float32)[1:].reshape(M, N)   # 4 bytes past an aligned start
    C[...] = C0
    from helpers.run import cpu_backend as cpu   # the fixture of that name only selects the backend
    assert cpu.address(C) % 16 and gemm.launch_config(STORE, N, C, cpu).EPILOGUE == 0
    for launch in gemm.launches(V, STORE, M, N, K, 1.5, A, B, -0.5, C):
        launch()
    ref, tol = verify.reference(A, B, C0, 1.5, -0.5, "tf32")
    assert verify.compare(C, C0, ref, tol, verify.Shape("offset C", M, N, K, 1.5, -0.5)).ok


def test_c_s_map_is_the_fp32_array_in_boxes_the_kernel_stages():
    box = STORE.output_map(300, 200)
    assert (box.rows, box.cols, box.box_rows, box.box_cols, box.tf32, box.store) == (300, 200, 32, 32, False, True)
    assert WS().output_map(300, 200) is None
    assert STORE.shared_bytes() == SMALL.shared_bytes() + 2 * 32 * 64 * 4
    assert WS(EPILOGUE=1).shared_bytes() <= 227 * 1024   # the default's ring leaves room for 2 x 2 buffers


def test_the_tma_stores_write_c_and_the_staging_writes_are_free_of_bank_conflicts():
    """Block 0's tiles reach C only through the copy engine (its writes traced, tagged 2 as the TMA loads' reads),
    each element of its tiles once, clipped at the edges; the threads' 8-byte writes of the staging buffers take
    one wavefront per half-warp (the lanes with t4 >= 2 write their two rows in the other order)."""
    from helpers.measure import ncu, trace
    M, N, K = 200, 132, 64   # block 0 of 132: tile (0, 0), rows 0-127, columns 0-63, all inside C
    tr = trace.capture_variant(V, STORE, M, N, K, blocks=(0,))
    r = tr.records
    c_buffer = next(b for b, name in tr.buffers.items() if name == "C")
    on_c = (r["space"] == 0) & (r["buffer"] == c_buffer) & (r["op"] == 1)
    assert not (on_c & (r["repeat"] == 0)).any()          # no thread stores C
    engine = r[on_c & (r["repeat"] == 2)]
    words = np.concatenate([np.arange(o // 4, (o + n) // 4) for o, n in zip(engine["offset"], engine["size"])])
    rows, cols = np.divmod(words, N)
    assert len(words) == len(set(words.tolist())) == 128 * 64 and rows.max() == 127 and cols.max() == 63
    counts = ncu.trace_counts(tr)
    assert counts["shared store requests"] > 0 and counts["shared store bank conflicts"] == 0
    assert counts["shared store wavefronts"] == 2 * counts["shared store requests"]
    assert memory.races(tr) == []
