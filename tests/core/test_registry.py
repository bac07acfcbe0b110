"""The stage registry: one list, consistent names, configurations that refuse bad tiles."""

import re

import pytest

from helpers.core import paths
from helpers.core import configs
from helpers.core import stages
from helpers.core.kernel_source import KernelSource
from helpers.core.configs import CoalescedConfig, NaiveConfig

ROOT = paths.ROOT


def test_ids_are_unique_two_digit_and_in_order():
    ids = [s.id for s in stages.REGISTRY]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"\d\d", i) for i in ids)
    assert ids == [f"{i:02d}" for i in range(13)]


def test_every_variant_has_its_kernel_file_and_function():
    for v in stages.variants():
        assert v.path.exists(), v.path
        assert v.name.startswith(v.stage_id + "_")
        assert v.kernel in KernelSource.read(v.path).kernel_names()


def test_every_kernel_file_is_registered():
    registered = {v.path.name for v in stages.variants()}
    on_disk = {p.name for p in (ROOT / "kernels").glob("*.cu")}
    assert on_disk == registered


def test_built_stages_have_notebooks_named_by_id_and_slug():
    for s in stages.REGISTRY:
        if s.variants:
            assert s.built, f"stage {s.id} has kernels but no notebook {s.notebook.name}"
    notebooks = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks == {s.notebook.name for s in stages.REGISTRY if s.built}


def test_readme_stage_table_follows_the_registry():
    readme = (ROOT / "README.md").read_text()
    for s in stages.REGISTRY:
        row = next((ln for ln in readme.splitlines() if ln.startswith(f"| {s.id} |")), None)
        assert row is not None, f"README has no row for stage {s.id}"
        assert (f"`notebooks/{s.notebook.name}`" in row) == s.built
        for v in s.variants:
            assert f"`kernels/{v.path.name}`" in row


@pytest.mark.parametrize("kwargs, rule", [
    (dict(block_x=64, block_y=32), "at most 1024 threads"),
    (dict(block_x=0, block_y=32), "at least 1"),
    (dict(block_x=32, block_y=-4), "at least 1"),
    (dict(block_x=8.0, block_y=8), "whole number"),
])
def test_bad_configurations_name_the_broken_rule(kwargs, rule):
    with pytest.raises(ValueError, match=rule) as e:
        NaiveConfig(**kwargs)
    assert "NaiveConfig" in str(e.value)


def test_launch_geometry_covers_the_matrix_exactly_once():
    M, N = 100, 37
    c = NaiveConfig(block_x=16, block_y=8)
    assert c.grid(M, N) == (7, 5, 1) and c.block() == (16, 8, 1)
    d = CoalescedConfig(block_x=16, block_y=8)
    assert d.grid(M, N) == (3, 13, 1)


def test_name_expressions_render_template_arguments():
    v = stages.variant("02_naive")
    assert v.name_expression() == "sgemm_naive"

    class Tiled(configs.KernelConfig):
        def template_args(self):
            return (128, 128, 8)
    assert stages.Variant("99_x", "sgemm", "", Tiled, Tiled()).name_expression() == "sgemm<128, 128, 8>"


def test_unknown_names_raise_with_the_known_ones():
    with pytest.raises(KeyError, match="02_naive"):
        stages.variant("02_nope")
    with pytest.raises(KeyError, match="00, 01"):
        stages.stage("42")


def test_kernels_say_which_gpus_cannot_run_them():
    wgmma, wmma = stages.variant("10_wgmma"), stages.variant("10_tensor_cores")
    assert wgmma.unsupported_on("9.0") is None
    for cc in ("8.0", "8.9", "10.0"):   # sm_90a code runs on compute capability 9.0 alone
        why = wgmma.unsupported_on(cc)
        assert "sm_90a" in why and f"sm_{cc.replace('.', '')}" in why and "emulator" in why
    assert "sm_80" in wmma.unsupported_on("7.5") and all(wmma.unsupported_on(cc) is None for cc in ("8.0", "9.0", "10.0"))
    assert all(v.unsupported_on("7.0") is None for v in stages.variants() if v.gpu_arch is None)


def test_the_registry_and_the_kernel_agree_on_sm_90a():
    # a kernel whose source (or a header it includes) uses wgmma must be registered as sm_90a, and only it
    for v in stages.variants():
        assert (KernelSource.read(v.path).required_arch() == "sm_90a") == (v.gpu_arch == "sm_90a"), v.name
