"""Every registered kernel on every GPU architecture the course is checked for (COURSE_ARCHS: sm_75 to
sm_120), compiled by NVRTC and assembled by ptxas from NVIDIA's pip wheels, no GPU needed. At its default
for that architecture (Variant.default_for) each kernel fits: at least one block per SM, shared memory
within what a block may have, and no spill the registry does not explain (Variant.spill_note). A kernel
an architecture cannot run is refused before anything compiles, naming the GPUs that can and the emulator.

About 45 s on two cores for the 8 x 14 pairs (ptxas's results are cached per process)."""

import pytest

from helpers import cli
from helpers.core import stages
from helpers.core.arch import ARCHS, COURSE_ARCHS, DEFAULT_ARCH, MEASURED_ON, arch_limits, occupancy
from helpers.core.errors import CourseError, UnsupportedFeatureError
from helpers.measure import resources
from helpers.measure import tuning_space
from helpers.run import backend, toolchain

pytestmark = pytest.mark.slow

PAIRS = [(v, a) for a in COURSE_ARCHS for v in stages.variants()]


@pytest.mark.parametrize("v,arch", PAIRS, ids=lambda x: getattr(x, "name", x))
def test_every_kernel_fits_every_architecture_that_can_run_it(v, arch):
    if v.unsupported_on(arch):
        return   # test_a_kernel_an_architecture_cannot_run_is_refused_before_compiling
    config = v.default_for(arch)
    r = resources.kernel_resources(v, arch=arch)
    assert r.name_expression == v.name_expression(config) and r.arch.startswith(arch)
    assert 1 <= r.registers <= 255
    assert r.static_shared_bytes + r.dynamic_shared_bytes <= arch_limits(arch).max_shared_per_block, r.describe()
    assert r.occupancy is not None and r.occupancy.active_blocks >= 1, r.describe()
    if r.spills:   # stated in the registry, for this architecture by name
        assert v.spill_note and arch in v.spill_note, (
            f"{v.name} spills on {arch} ({r.spill_store_bytes} B stored): explain it in the registry's "
            f"spill_note or register a configuration for {arch} that does not spill.\n{r.describe()}")
    assert resources.fits(r)


@pytest.mark.parametrize("v,arch", [(v, a) for v, a in PAIRS if v.unsupported_on(a)],
                         ids=lambda x: getattr(x, "name", x))
def test_a_kernel_an_architecture_cannot_run_is_refused_before_compiling(v, arch, monkeypatch):
    def no_compiling(*args, **kwargs):
        raise AssertionError("NVRTC was asked to compile a kernel the architecture cannot run")
    monkeypatch.setattr(toolchain, "nvrtc_ptx", no_compiling)
    with pytest.raises(UnsupportedFeatureError) as e:
        resources.kernel_resources(v, arch=arch)
    why = str(e.value)
    assert isinstance(e.value, CourseError) and arch in why and "emulator" in why
    able = [a for a in COURSE_ARCHS if not v.unsupported_on(a)]
    assert able and all(ARCHS[a].gpus in why for a in able)   # the GPUs that can run it, by name


def test_which_kernels_each_architecture_refuses():
    refused = {a: sorted(v.name for v in stages.variants() if v.unsupported_on(a)) for a in COURSE_ARCHS}
    hopper_only = ["10_wgmma", "11_stream_k", "12_warp_specialized"]  # wgmma, setmaxnreg: sm_90a
    assert refused["sm_75"] == ["10_mma_sync", "10_tensor_cores", *hopper_only]     # TF32 mma.sync, wmma: sm_80
    assert refused["sm_90"] == []
    assert all(refused[a] == hopper_only for a in COURSE_ARCHS if a not in ("sm_75", "sm_90"))


def test_per_architecture_defaults_only_where_the_measured_one_cannot_launch():
    for v in stages.variants():
        assert MEASURED_ON not in v.arch_defaults, f"{v.name}: the default measured on the H200 is sm_90's"
        for arch, config in v.arch_defaults.items():
            assert arch in COURSE_ARCHS and isinstance(config, v.config_type)
            # verified on the emulator by tests/stages/test_every_kernel.py, with the alternatives
            d = v.default
            assert occupancy(arch, d.threads(), 0, d.static_shared_bytes(), d.shared_bytes()).active_blocks == 0
            cc = f"{arch[3:-1]}.{arch[-1]}"   # sm_86 -> 8.6, as a GPU reports it
            assert v.default_for(arch) == v.default_for(cc) == config


def test_tensor_cores_on_the_99_kib_architectures():
    v = stages.variant("10_tensor_cores")
    assert v.default.shared_bytes() == 112_640 > 99 * 1024        # the H200's default: 110 KiB
    for arch in ("sm_86", "sm_89", "sm_120"):
        assert v.default_for(arch).shared_bytes() <= 99 * 1024
    for arch in ("sm_80", "sm_87", "sm_90", "sm_100"):
        assert v.default_for(arch) == v.default
    mma = stages.variant("10_mma_sync")   # the same configurations, without the staging tiles
    assert mma.default.shared_bytes() == 107_520 > 99 * 1024
    for arch in ("sm_86", "sm_89", "sm_120"):
        assert mma.default_for(arch).template_args() == v.default_for(arch).template_args()
        assert mma.default_for(arch).shared_bytes() == v.default_for(arch).shared_bytes() - 8 * 16 * 20 * 4


def test_sm_100_and_sm_120_occupancy_by_hand():
    # sm_100: 64 warps, 32 blocks, 228 KiB; 256 threads x 128 registers = 4096 per warp x 8 = 2 blocks
    o = occupancy("sm_100", 256, 128, 0, 67072)
    assert (o.active_blocks, o.max_warps, o.limited_by) == (2, 64, ("registers",))
    # sm_120: 48 warps, 99 KiB a block: 67072 + 1024 -> 68096 B, one block of 100 KiB
    o = occupancy("sm_120", 256, 128, 0, 67072)
    assert (o.active_blocks, o.max_warps, o.limited_by) == (1, 48, ("shared memory",))
    assert occupancy("sm_120", 128, 32, 0, 100 * 1024).active_blocks == 0
    assert occupancy("sm_87", 1024, 32).max_warps == 48
    # one-warp blocks stop at the block-slot limit: 24 on sm_89 and sm_120, 16 on sm_86, 32 on sm_90 and sm_100
    # (the Programming Guide's table, and CCCL's arch_traits.h)
    assert {a: occupancy(a, 32, 16).active_blocks for a in ("sm_86", "sm_89", "sm_90", "sm_100", "sm_120")} == \
        {"sm_86": 16, "sm_89": 24, "sm_90": 32, "sm_100": 32, "sm_120": 24}
    for a in COURSE_ARCHS:
        assert ARCHS[a].gpus and ARCHS[a].registers_per_sm == 65536


def test_the_learners_architecture_on_the_emulator(cpu_backend, monkeypatch):
    monkeypatch.delenv(backend.ARCH_ENV_VAR, raising=False)
    assert backend.arch() == DEFAULT_ARCH == MEASURED_ON
    monkeypatch.setenv(backend.ARCH_ENV_VAR, "8.6")
    assert backend.arch() == "sm_86"
    r = resources.kernel_resources("10_tensor_cores")      # no arch, no config: sm_86's default
    assert r.arch == "sm_86" and r.name_expression == stages.variant("10_tensor_cores").name_expression(
        stages.variant("10_tensor_cores").default_for("sm_86"))
    monkeypatch.setenv(backend.ARCH_ENV_VAR, "pascal")
    with pytest.raises(backend.ArchSettingError, match=r"Fix: set it to one of sm_75.*sm_120"):
        backend.arch()


def test_resources_command_prints_one_architecture(capsys):
    assert cli.main(["resources", "--arch", "sm_86"]) == 0
    out = capsys.readouterr().out
    assert "on sm_86 (RTX 30xx" in out and "ptxas -v for sm_86" in out
    tc = stages.variant("10_tensor_cores")
    assert f"| {tc.name_expression(tc.default_for('sm_86'))} †" in out
    assert "10_wgmma is not compiled for sm_86" in out and "H100, H200" in out
    assert "48 warps, 16 blocks" in out



def test_the_autotuners_search_space_is_the_learners(cpu_backend, monkeypatch):
    v = stages.variant("10_tensor_cores")
    monkeypatch.setenv(backend.ARCH_ENV_VAR, "sm_86")
    space = tuning_space.search_space(v, radius=1)
    assert space.arch == "sm_86" and space.configs[0] == v.default_for("sm_86") and "for sm_86" in space.summary()
    assert all(tuning_space.does_not_fit(c) is None for c in space.configs)
    assert v.default not in space.configs                          # 110 KiB: it cannot launch on sm_86
    assert "shared memory" in tuning_space.does_not_fit(v.default)
    assert tuning_space.does_not_fit(v.default, "sm_90") is None
    monkeypatch.delenv(backend.ARCH_ENV_VAR)
    assert tuning_space.search_space(v, radius=0).configs == (v.default,)
