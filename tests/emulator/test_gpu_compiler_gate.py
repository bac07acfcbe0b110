"""The CPU emulator accepts what a GPU accepts: NVRTC compiles a kernel before the emulator builds
it (its message is the one a learner sees), and a learner's own macros and names never collide
with the emulator's code."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import emulator
from helpers.core import paths
from helpers.core.errors import KernelCompileError, UnsupportedFeatureError
from helpers.core.kernel_source import KernelSource
from helpers.run import toolchain
from helpers.run.kernel_loader import load_kernel

KERNELS = paths.ROOT / "tests" / "kernels"

pytestmark = [pytest.mark.usefixtures("cpu_backend"), pytest.mark.emulator]


def marked_line(file: str, tag: str) -> int:
    for number, text in enumerate((KERNELS / file).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"// LINE: {tag}"):
            return number
    raise LookupError(f"no `// LINE: {tag}` in {file}")


@pytest.fixture
def never_built(monkeypatch):
    """Fails the test if the emulator builds anything (the kernel must stop at NVRTC)."""
    def build(*args, **kwargs):
        raise AssertionError("the emulator built a kernel that NVRTC refuses")
    monkeypatch.setattr(emulator, "build", build)


HOST_CALLS = {  # the kernel's own declarations of them, and NVRTC's first words about them
    "undeclared": ("", 'host_calls.cu:2: error: identifier "system" is undefined'),
    "declared by the kernel": ('extern "C" int system(const char*);\nstruct FILE;\n'
                               'extern "C" FILE* fopen(const char*, const char*);\n',
                               "host_calls.cu:1: error: A function without execution space annotations "
                               "(__host__/__device__/__global__) is considered a host function"),
}


@pytest.mark.parametrize("declarations, says", HOST_CALLS.values(), ids=HOST_CALLS.keys())
def test_a_kernel_calling_host_functions_fails_with_nvrtcs_message_and_never_runs(tmp_path, never_built,
                                                                                  declarations, says):
    ran, wrote = tmp_path / "system-ran", tmp_path / "fopen-wrote"
    cu = tmp_path / "host_calls.cu"
    cu.write_text(f"{declarations}__global__ void k(float* out) {{\n"
                  f'  system("touch {ran}");\n'
                  f'  fopen("{wrote}", "w");\n'
                  f"  out[threadIdx.x] = 1.0f;\n}}\n")
    with pytest.raises(KernelCompileError) as err:
        load_kernel(cu, "k")
    text = str(err.value)
    assert "did not compile with NVRTC" in text and says in text and "fopen" in text
    assert not ran.exists() and not wrote.exists()


def test_a_compile_error_is_nvrtcs_message_with_the_files_line(never_built):
    line = marked_line("compile_error.cu", "compile_error")
    with pytest.raises(KernelCompileError) as err:
        load_kernel(KERNELS / "compile_error.cu", "broken")
    text = str(err.value)
    assert "did not compile with NVRTC" in text and f"(for {toolchain.DEFAULT_ARCH})" in text
    assert f'compile_error.cu:{line}: error: identifier "undeclared_variable" is undefined' in text


def test_inline_ptx_passes_nvrtc_and_is_then_refused_by_the_emulator():
    toolchain.check_gpu_compiles(KernelSource.read(KERNELS / "inline_ptx.cu"), ("lane_id",))  # a GPU takes it
    with pytest.raises(UnsupportedFeatureError, match="inline PTX"):
        load_kernel(KERNELS / "inline_ptx.cu", "lane_id")


def test_kernels_using_wgmma_are_checked_for_sm_90a(never_built, tmp_path):
    cu = tmp_path / "wgmma_typo.cu"
    cu.write_text('#include "wgmma.cuh"\n__global__ void k(float* out) { wgmma_fence(); out[0] = undefined_x; }\n')
    with pytest.raises(KernelCompileError, match=r"\(for sm_90a\)[\s\S]*wgmma_typo\.cu:2: .*undefined_x"):
        load_kernel(cu, "k")


def test_the_nvrtc_verdict_is_cached_on_the_source_and_its_headers(tmp_path, monkeypatch):
    compiles = []
    real = toolchain._compile_program
    monkeypatch.setattr(toolchain, "_compile_program", lambda *a: compiles.append(1) or real(*a))
    (tmp_path / "scale.cuh").write_text("#define SCALE 2.0f\n")
    cu = tmp_path / "cached.cu"
    cu.write_text(f'#include "scale.cuh"\n// {tmp_path}\n__global__ void k(float* out) {{ out[0] = SCALE; }}\n')
    for _ in range(3):
        toolchain.check_gpu_compiles(KernelSource.read(cu), ("k",))
    assert len(compiles) == 1
    (tmp_path / "scale.cuh").write_text("#define SCALE undefined_scale\n")  # an edited header is a new key
    with pytest.raises(KernelCompileError, match="undefined_scale"):
        toolchain.check_gpu_compiles(KernelSource.read(cu), ("k",))
    assert len(compiles) == 2


def test_without_nvrtc_the_emulator_says_how_to_get_it(tmp_path, monkeypatch, never_built):
    monkeypatch.setattr(toolchain, "_nvrtc_candidates", lambda: [])
    toolchain._nvrtc_alone.cache_clear()
    try:
        cu = tmp_path / "k.cu"
        cu.write_text(f"// {tmp_path}\n__global__ void k(float* out) {{ out[0] = 1.0f; }}\n")
        with pytest.raises(toolchain.ToolchainMissingError, match="requirements.txt"):
            load_kernel(cu, "k")
    finally:
        toolchain._nvrtc_alone.cache_clear()


# ---- a learner's names --------------------------------------------------------------------------------
def test_a_learners_macros_and_type_names_above_a_kernel_work_as_on_nvrtc(tmp_path):
    cu = tmp_path / "macros.cu"
    cu.write_text("#define T 16\n#define N 64\n#define BLOCK 32\ntypedef float real;\n"
                  "__global__ void k(real* out) {\n"
                  "  const int i = blockIdx.x * BLOCK + threadIdx.x;\n"
                  "  if (i < N) out[i] = (real)(T * i);\n"
                  "}\n")
    out = np.zeros(64, np.float32)
    load_kernel(cu, "k")((2,), (32,), (out,))
    np.testing.assert_array_equal(out, 16 * np.arange(64, dtype=np.float32))


def test_an_unroll_count_may_be_a_macro_or_a_template_parameter(tmp_path):
    cu = tmp_path / "unroll.cu"
    cu.write_text("#define UNROLL 4\n"
                  "template <int TM>\n__global__ void k(float* out) {\n  float s = 0.0f;\n"
                  "#pragma unroll UNROLL\n  for (int i = 0; i < 8; ++i) s += i;\n"
                  "#pragma unroll (TM)  // a count in parentheses\n  for (int i = 0; i < 8; ++i) s += i;\n"
                  "#pragma unroll TM\n  for (int i = 0; i < 8; ++i) s += i;\n"
                  "  out[threadIdx.x] = s;\n}\n")
    out = np.zeros(32, np.float32)
    load_kernel(cu, "k<4>")((1,), (32,), (out,))
    np.testing.assert_array_equal(out, 84.0)


def test_no_name_the_emulator_used_for_itself_reaches_it_from_a_kernel():
    """tests/kernels/learner_names.cu defines, above and below the CUDA headers it includes, every
    name the emulator's headers, macros and generated lines once used (all of which NVRTC accepts),
    and uses barriers, shuffles, atomics, asynchronous copies and wmma."""
    rng = np.random.default_rng(0)
    A = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    B = rng.integers(-4, 5, (8, 16)).astype(np.float32)
    out = np.zeros(322, np.float32)
    load_kernel(KERNELS / "learner_names.cu", "learner_names")((1,), (64,), (np.concatenate([A.ravel(), B.ravel()]), out),
                                                                 shared_mem=64 * 4)
    np.testing.assert_array_equal(out[:256].reshape(16, 16), A @ B)
    np.testing.assert_array_equal(out[256:320], np.repeat([497.0, 1521.0], 32))  # warp sums of 0..63, + 1
    assert out[320] == 64 and out[321] == 16 + 64 + 32


def test_a_global_named_like_a_c_library_function_is_explained(tmp_path):
    cu = tmp_path / "div.cu"
    cu.write_text("__device__ int div(int a, int b) { return (a + b - 1) / b; }\n"
                  "__global__ void k(int* out) { out[0] = div(7, 2); }\n")
    toolchain.check_gpu_compiles(KernelSource.read(cu), ("k",))  # NVRTC takes it
    with pytest.raises(KernelCompileError, match=r"declares a global `div` of its own\. Fix: give yours another name"):
        load_kernel(cu, "k")


# ---- the gate's back doors (issue 32, item 7): the emulator builds exactly what NVRTC compiled -----------------------
HOST_BODY = 'extern "C" int system(const char*);\nstatic int pwned = system("touch {ran}");\n'
BACK_DOORS = {   # the kernel's file (and a header beside it), and what the learner is told
    "#ifndef __CUDACC_RTC__ (was: g++ built it, a static constructor ran)":
        ("#ifndef __CUDACC_RTC__\n" + HOST_BODY + "#endif\n", None, None),
    "#if !defined(__CUDACC__)": ("#if !defined(__CUDACC__)\n" + HOST_BODY + "#endif\n", None, None),
    "#ifdef __GNUC__": ("#ifdef __GNUC__\n" + HOST_BODY + "#endif\n", None,
                        r"door\.cu:1: the CPU emulator's C\+\+ compiler would take this branch, which NVRTC skips"),
    "#if __has_include(<stdio.h>)": ("#if __has_include(<stdio.h>)\n" + HOST_BODY + "#else\n#endif\n", None,
                                     r"would take this branch, which NVRTC skips"),
    "#elif on a GCC macro": ("#if 0\n#elif defined(__x86_64__)\n" + HOST_BODY + "#endif\n", None,
                             r"door\.cu:2: the CPU emulator's C\+\+ compiler would take this branch"),
    "#ifndef __CUDACC_RTC__ in a header beside the kernel":
        ('#include "helper.cuh"\n', "#pragma once\n#ifndef __CUDACC_RTC__\n" + HOST_BODY + "#endif\n", None),
    "#ifdef __GNUC__ in a header beside the kernel":
        ('#include "helper.cuh"\n', "#ifdef __GNUC__\n" + HOST_BODY + "#endif\n", r"helper\.cuh:1: the CPU emulator"),
    "a computed #include of a header beside the kernel":
        ('#define HEADER "helper.cuh"\n#include HEADER\n', "#ifdef __GNUC__\n" + HOST_BODY + "#endif\n",
         r"includes .*helper\.cuh, a file NVRTC compiles apart from the emulator"),
}


@pytest.mark.parametrize("kernel_head, header, refused", BACK_DOORS.values(), ids=BACK_DOORS.keys())
def test_code_nvrtc_skips_never_reaches_the_emulator(tmp_path, kernel_head, header, refused):
    ran = tmp_path / "host-code-ran"
    if header is not None:
        (tmp_path / "helper.cuh").write_text(header.format(ran=ran))
    cu = tmp_path / "door.cu"
    cu.write_text(kernel_head.format(ran=ran) + "__global__ void k(float* out) { out[threadIdx.x] = 2.0f; }\n")
    out = np.zeros(32, np.float32)
    if refused is None:        # built as NVRTC compiled it: the host part is not there
        load_kernel(cu, "k")((1,), (32,), (out,))
        assert (out == 2.0).all()
    else:
        with pytest.raises((KernelCompileError, UnsupportedFeatureError), match=refused):
            load_kernel(cu, "k")((1,), (32,), (out,))
    assert not ran.exists(), "host code the GPU's compiler never saw ran on the emulator"


HIDDEN_ASM = {
    "token pasting": '#define CAT(a, b) a##b\n__global__ void k(float* out) { CAT(as, m) volatile("nop"); '
                     'out[0] = 1.0f; }\n',
    "a macro named otherwise": '#define NOP asm\n__global__ void k(float* out) { NOP volatile("nop"); '
                               'out[0] = 1.0f; }\n',
    "a line splice": '__global__ void k(float* out) { a\\\nsm volatile("nop"); out[0] = 1.0f; }\n',
}


@pytest.mark.parametrize("text", HIDDEN_ASM.values(), ids=HIDDEN_ASM.keys())
def test_inline_assembly_hidden_by_the_preprocessor_is_refused(tmp_path, text):
    cu = tmp_path / "hidden.cu"
    cu.write_text(text)
    toolchain.check_gpu_compiles(KernelSource.read(cu), ("k",))   # NVRTC passes asm through to PTX
    with pytest.raises(UnsupportedFeatureError, match=r"hidden\.cu:\d+: inline assembly"):
        load_kernel(cu, "k")


UNLOADABLE = {   # NVRTC compiles each; a GPU cannot load it, or runs it otherwise than g++ would
    "a C library function declared as a device function (was: g++ linked libc's system)":
        ('extern "C" __device__ int system(const char*);\n__global__ void k(float* out) {{ system("touch {ran}"); '
         'out[0] = 1.0f; }}\n', r"calls system, declared but never defined"),
    "a C++ device function declared and never defined":
        ('__device__ int helper(int);\n__global__ void k(float* out) {{ out[0] = helper(1); }}\n',
         r"calls _Z6helperi, declared but never defined"),
    "an extern device variable (g++ would link the C library's)":
        ('extern __device__ char** environ;\n__global__ void k(float* out) {{ out[0] = environ != 0; }}\n',
         r"`extern` on the device variable environ"),
    "a constructor attribute": ('__device__ __attribute__((constructor)) void early() {{ }}\n'
                                '__global__ void k(float* out) {{ out[0] = 1.0f; }}\n',
                                r"the attribute `constructor` makes code run outside a kernel's launch"),
}


@pytest.mark.parametrize("text, says", UNLOADABLE.values(), ids=UNLOADABLE.keys())
def test_what_nvrtc_compiles_and_a_gpu_would_not_load_is_refused(tmp_path, text, says):
    ran = tmp_path / "ran"
    cu = tmp_path / "unloadable.cu"
    cu.write_text(text.format(ran=ran))
    with pytest.raises((KernelCompileError, UnsupportedFeatureError), match=says):
        load_kernel(cu, "k")((1,), (32,), (np.zeros(32, np.float32),))
    assert not ran.exists()


def test_conditionals_both_compilers_read_alike_build_and_run(tmp_path):
    (tmp_path / "tile.cuh").write_text("#ifndef TILE\n#define TILE 4\n#endif\n#if defined(__CUDA_ARCH__) && "
                                       "__CUDA_ARCH__ >= 700\n#define SCALE 3.0f\n#else\n#define SCALE -1.0f\n#endif\n")
    cu = tmp_path / "alike.cu"
    cu.write_text('#include "tile.cuh"\n#ifdef __CUDACC_RTC__\n#define WHO 1.0f\n#else\n#define WHO 100.0f\n#endif\n'
                  "#if TILE == 4 \\\n    && 1\n__global__ void k(float* out) { out[threadIdx.x] = SCALE * TILE + WHO; }\n"
                  "#endif\n// the line below is line 11: messages keep the file's numbering\n"
                  "__global__ void broken(float* out) { out[0] = 1.0f; }\n")
    out = np.zeros(32, np.float32)
    load_kernel(cu, "k")((1,), (32,), (out,))
    assert (out == 13.0).all()
