"""The roofline: datasheet table and lookup by reported name, ceilings, points only from
measurements (committed results files, checked back against the files), the figure, and on a
GPU the measured ceilings."""

import json
from fractions import Fraction
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from helpers.views import roofline_plot
from helpers.core import gpu_specs
from helpers.measure import intensity
from helpers.measure import roofline
from helpers.core import stages  # noqa: E402
from helpers.core.device import DeviceInfo  # noqa: E402
from helpers.core.paths import RESULTS_DIR  # noqa: E402
from helpers.core.errors import CourseError  # noqa: E402
from helpers.measure.roofline import Ceilings, Point  # noqa: E402
from helpers.core.configs import NaiveConfig  # noqa: E402


# ---- the datasheet table ------------------------------------------------------------------------
@pytest.mark.parametrize("reported,key,tflops,tbs", [
    ("NVIDIA H200", "H200", 67.0, 4.8),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 66.9, 3.35),
    ("NVIDIA H100 SXM5 80GB", "H100 SXM", 66.9, 3.35),
    ("NVIDIA H100 PCIe", "H100 PCIe", 51.0, 2.0),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 19.5, 2.04),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB", 19.5, 1.56),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB", 19.5, 1.56),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", 82.6, 1.01),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", 35.6, 0.94),
    ("NVIDIA L4", "L4", 30.3, 0.30),
    ("Tesla T4", "T4", 8.1, 0.32),
    ("Tesla V100-SXM2-16GB", "V100 SXM2", 15.7, 0.90),
    ("H100 SXM", "H100 SXM", 66.9, 3.35),
])
def test_lookup_by_reported_name(reported, key, tflops, tbs):
    s = gpu_specs.lookup(reported)
    assert s is not None and (s.key, s.fp32_tflops, s.dram_tbs) == (key, tflops, tbs)
    assert s.source == "datasheet" and "datasheet" in s.label()


@pytest.mark.parametrize("reported", ["NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA L40S",
                                      "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 3090 Ti",
                                      "NVIDIA A100 80GB PCIe", "Tesla V100-PCIE-32GB", "CPU emulator"])
def test_boards_with_other_figures_match_nothing(reported):
    assert gpu_specs.lookup(reported) is None
    with pytest.raises(KeyError, match="no datasheet entry"):
        gpu_specs.spec(reported)


def test_every_entry_is_labelled_datasheet_and_the_a100_range_is_noted():
    assert all(s.source == "datasheet" for s in gpu_specs.SPECS)
    assert "1.56" in gpu_specs.spec("NVIDIA A100-SXM4-80GB").note
    table = gpu_specs.table()
    assert table.count("| datasheet") == len(gpu_specs.SPECS)


# ---- ceilings ---------------------------------------------------------------------------------------
def test_ceilings_ridge_and_roofs():
    c = Ceilings.from_spec("NVIDIA H200")
    assert (c.fp32_tflops, c.dram_tbs, c.source) == (67.0, 4.8, "datasheet")
    assert c.ridge_flop_per_byte == pytest.approx(67.0 / 4.8)          # 13.96 FLOP/B
    assert c.attainable(1.0) == pytest.approx(4.8) and c.attainable(100.0) == 67.0


def test_ceilings_from_device_properties():
    info = DeviceInfo("gpu", "NVIDIA H200", "9.0", sm_count=132, clock_ghz=1.98, fp32_lanes_per_sm=128,
                      memory_bandwidth_tbs=4.8)
    c = Ceilings.from_device(info)
    assert c.fp32_tflops == pytest.approx(132 * 128 * 2 * 1.98 / 1000)   # 66.9
    assert c.source == "device properties" and "132 SMs" in c.detail
    with pytest.raises(CourseError, match="from_spec"):
        Ceilings.from_device(DeviceInfo("cpu", "CPU emulator"))


def test_measuring_needs_a_gpu(cpu_backend):
    with pytest.raises(CourseError, match="GPU"):
        roofline.measure_ceilings()
    with pytest.raises(CourseError, match="reference_roofline"):
        roofline.measured_roofline()


# ---- points from measurements ---------------------------------------------------------------------
def test_config_from_row():
    v = stages.variant("02_naive")
    assert roofline.config_from_row(v, {}) == v.default
    assert roofline.config_from_row(v, {"config": "block_x=16, block_y=8"}) == NaiveConfig(16, 8)
    assert roofline.config_from_row(v, {"config": "cupy.matmul, TF32 off"}) is None
    assert roofline.config_from_row(stages.variant("03_smem_tiling"), {"config": "tile=64"}) is None  # 4096 threads


def test_points_from_rows_use_the_model_at_the_measured_shape():
    rows = [{"variant": "02_naive_coalesced", "M": 1024, "N": 512, "K": 256, "tflops": 1.5,
             "config": "block_x=32, block_y=8"}]
    (p,) = roofline.points_from_rows(rows, "test source")
    expected = intensity.intensity("02_naive_coalesced", 1024, 512, 256, stages.variant("02_naive_coalesced").config(
        block_x=32, block_y=8))
    assert (p.intensity_flop_per_byte, p.tflops, p.source, p.variant) == (expected.dram, 1.5, "test source",
                                                                          "02_naive_coalesced")
    (p,) = roofline.points_from_rows(rows, "s", level="requests")
    assert p.intensity_flop_per_byte == expected.requests
    with pytest.raises(ValueError, match="DRAM"):
        roofline.points_from_rows(rows, "s", level="l1")
    # the shared-memory roofline's points: kernels that load nothing from shared memory have none
    assert roofline.points_from_rows(rows, "s", level="smem") == []
    tiled = [{"variant": "03_smem_tiling", "M": 256, "N": 256, "K": 256, "tflops": 2.0, "config": "tile=32"}]
    (p,) = roofline.points_from_rows(tiled, "s", level="smem")
    assert p.intensity_flop_per_byte == pytest.approx(0.25)   # one multiply-add per two 4-byte loads


def _write(path: Path, gpu: str | None, date: str, rows: list, **extra):
    data = {"rows": rows, **extra}
    if gpu:
        data["provenance"] = {"gpu": gpu, "date": date, "driver": "13.0", "cupy": "14.2.0"}
    path.write_text(json.dumps(data))


def _row(variant, n, tflops, **kw):
    return {"variant": variant, "M": n, "N": n, "K": n, "median_ms": 2 * n**3 / tflops / 1e9, "tflops": tflops, **kw}


@pytest.fixture
def results_dir(tmp_path):
    _write(tmp_path / "a.json", "NVIDIA H200", "2026-01-01T00:00:00+00:00",
           [_row("cublas_sgemm", 4096, 40.0), _row("02_naive", 4096, 0.40)])
    _write(tmp_path / "b.json", "NVIDIA H200", "2026-02-01T00:00:00+00:00",
           [_row("cublas_sgemm", 4096, 45.0), _row("02_naive", 4096, 0.45, config="block_x=16, block_y=16"),
            _row("cublas_sgemm", 1024, 20.0), _row("02_naive", 1024, 0.42, config="block_x=16, block_y=16")])
    _write(tmp_path / "h100.json", "NVIDIA H100 80GB HBM3", "2026-03-01T00:00:00+00:00",
           [_row("cublas_sgemm", 4096, 49.0), _row("02_naive", 4096, 9.9)])
    _write(tmp_path / "no_provenance.json", None, "", [_row("02_naive_coalesced", 4096, 6.0)])
    _write(tmp_path / "ceilings.json", "NVIDIA H200", "2026-03-01T00:00:00+00:00", [],
           ceilings={"cublas_tflops": 48.0, "cublas_size": 4096, "copy_tbs": 4.1, "copy_bytes": 2**30})
    return tmp_path


def test_reference_roofline_reads_only_this_gpus_measurements(results_dir):
    c, points = roofline.reference_roofline("NVIDIA H200", directory=results_dir)
    assert (c.fp32_tflops, c.dram_tbs, c.source) == (67.0, 4.8, "datasheet")
    (p,) = points                                 # nothing from the H100 file or the file without provenance
    # the registered configuration (32 x 32 blocks) is preferred to a newer run of another one
    assert (p.label, p.tflops) == ("02_naive", 0.40)
    # 2K / 4(2K/32 + 2) at K = 4096
    assert Fraction(p.intensity_flop_per_byte).limit_denominator(10**6) == Fraction(8192, 4 * 258)
    assert "NVIDIA H200" in p.source and "2026-01-01" in p.source and "a.json" in p.source
    assert c.cublas_tflops == 48.0 and "2026-03-01" in c.cublas_source          # the newest at 4096^3
    assert c.copy_tbs == 4.1 and "device copy" in c.copy_source and "NVIDIA H200" in c.copy_source
    _, all_points = roofline.reference_roofline("NVIDIA H200", all_shapes=True, directory=results_dir)
    assert sorted((p.label, p.tflops) for p in all_points) == [("02_naive 1024x1024x1024", 0.42),
                                                                ("02_naive 4096x4096x4096", 0.40)]
    c, points = roofline.reference_roofline("NVIDIA H100 SXM5 80GB", directory=results_dir)
    assert [(p.label, p.tflops) for p in points] == [("02_naive", 9.9)] and c.cublas_tflops == 49.0


def test_reference_roofline_for_a_gpu_without_results(results_dir):
    c, points = roofline.reference_roofline("NVIDIA GeForce RTX 4090", directory=results_dir)
    assert points == [] and c.cublas_tflops is None and c.copy_tbs is None and c.fp32_tflops == 82.6
    with pytest.raises(KeyError, match="no datasheet entry"):
        roofline.reference_roofline("Some Unknown GPU", directory=results_dir)


def test_committed_points_trace_back_to_committed_files():
    """Every point of the H200 reference is a row of a committed results file of that GPU: same
    variant, same TFLOP/s, and its source names the GPU, the file and the file's date."""
    _, points = roofline.reference_roofline("NVIDIA H200", all_shapes=True)
    files = {}
    for path in sorted(RESULTS_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and (data.get("provenance") or {}).get("gpu") == "NVIDIA H200":
            files[path.name] = data
    for p in points:
        name = next(f for f in files if f in p.source)
        data = files[name]
        rows = data["rows"] + ([data["cublas"]] if "cublas" in data else [])
        assert any(r.get("variant") == p.variant and r.get("tflops") == p.tflops for r in rows), p
        assert "NVIDIA H200" in p.source and data["provenance"]["date"][:10] in p.source
    names = {v.name for v in stages.variants()}
    assert {p.variant for p in points} <= names


# ---- the figure ---------------------------------------------------------------------------------------
def test_plot_roofline_draws_roofs_ridge_ceilings_and_points():
    c = Ceilings("Test GPU", 60.0, 3.0, "datasheet", cublas_tflops=45.0, cublas_source="measured x",
                 copy_tbs=2.5, copy_source="measured y")
    pts = [Point("k1", 0.25, 0.5, "measured on Test GPU, 2026-01-01"), Point("k2", 8.0, 6.0, "measured z")]
    fig = roofline_plot.plot_roofline(c, pts)
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        roof = ax.lines[0]
        x, y = roof.get_xdata(), roof.get_ydata()
        assert y[0] == pytest.approx(3.0 * x[0]) and y[-1] == 60.0          # DRAM slope, then FP32 flat
        dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
        assert len(dashed) == 2
        assert any(list(line.get_xdata()) == [20.0] and list(line.get_ydata()) == [60.0] for line in ax.lines)
        for p in pts:
            assert any(list(line.get_xdata()) == [p.intensity_flop_per_byte] and list(line.get_ydata()) == [p.tflops]
                       for line in ax.lines)
        texts = " ".join(t.get_text() for t in ax.texts)
        assert "ridge point 20.0 FLOP/B" in texts and "k1" in texts and "k2" in texts
        assert "measured on Test GPU, 2026-01-01" in texts and "measured x" in texts
        legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
        assert "datasheet" in legend and "cuBLAS" in legend and "copy" in legend
    finally:
        plt.close(fig)


def test_plot_roofline_on_a_given_axis_without_measured_ceilings():
    fig, ax = plt.subplots()
    try:
        out = roofline_plot.plot_roofline(Ceilings.from_spec("Tesla T4"), [], ax=ax, title="T4")
        assert out is fig and ax.get_title() == "T4"
        assert not [line for line in ax.lines if line.get_linestyle() == "--"]
        pts = [Point("a", 1, 1, "s", "02_naive"), Point("b", 2, 2, "s", "02_naive")]
        fig2 = roofline_plot.plot_roofline(Ceilings.from_spec("Tesla T4"), pts, labels=False)
        legend = [t.get_text() for t in fig2.axes[0].get_legend().get_texts()]
        assert legend.count("02_naive") == 1
        plt.close(fig2)
    finally:
        plt.close(fig)


def test_coinciding_points_are_rings_around_each_other_and_their_labels_stack():
    """07 and 08 sit at the same intensity and nearly the same TFLOP/s: neither may hide the other."""
    pts = [Point("07", 31.0, 44.5, "s", "07_vectorized"), Point("08", 31.0, 44.3, "s", "08_warp_tiling"),
           Point("far", 2.0, 5.0, "s", "03_smem_tiling")]
    fig = roofline_plot.plot_roofline(Ceilings.from_spec("NVIDIA H200"), pts)
    try:
        marks = [line for line in fig.axes[0].lines if line.get_marker() == "o" and len(line.get_xdata()) == 1
                 and line.get_xdata()[0] in (31.0, 2.0)]
        sizes = [(m.get_markersize(), m.get_markerfacecolor()) for m in marks]
        assert sizes[0][0] < sizes[1][0] and sizes[1][1] == "none" and sizes[2][0] == sizes[0][0]
        offsets = {t.get_text().split()[0]: t.xyann for t in fig.axes[0].texts if t.get_text().startswith(("07", "08"))}
        assert offsets["08"][1] < offsets["07"][1] - 20, offsets
    finally:
        plt.close(fig)


def test_reference_figure_of_the_committed_results():
    fig = roofline_plot.plot_roofline(*roofline.reference_roofline("NVIDIA H200"))
    plt.close(fig)


# ---- on a GPU ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_measure_ceilings_on_the_gpu(tmp_path):
    c = roofline.measure_ceilings(n_repeat=10, save_to=tmp_path / "ceilings.json")
    assert c.source == "device properties"
    assert 0.2 * c.fp32_tflops < c.cublas_tflops < 1.05 * c.fp32_tflops
    assert 0.3 * c.dram_tbs < c.copy_tbs < 1.05 * c.dram_tbs
    again, _ = roofline.reference_roofline(c.gpu, directory=tmp_path) if gpu_specs.lookup(c.gpu) else (None, None)
    if again is not None:       # the saved file reads back as this GPU's measured ceilings
        assert again.copy_tbs == pytest.approx(c.copy_tbs) and again.cublas_tflops == pytest.approx(c.cublas_tflops)
