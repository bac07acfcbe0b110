"""The command-line tools: verdicts, exit codes, one readable message per failure."""
import re

from helpers.core import paths
from support import helpers_cli

ROOT = paths.ROOT


def test_info_prints_the_banner():
    r = helpers_cli("info")
    assert r.returncode == 0 and r.stdout.startswith("Backend:")


def test_ladder_verifies_every_registered_kernel():
    from helpers.core import stages
    r = helpers_cli("ladder", "--size", "1024", "--repeat", "5")
    assert r.returncode == 0, r.stderr
    for v in stages.variants():
        assert any(line.startswith(v.name) and " yes" in line for line in r.stdout.splitlines())


def test_check_passes_a_correct_kernel():
    r = helpers_cli("check", "kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "5,3",
                    "--block", "16,16", "--mnk", "77,45,31", "--backend", "cpu")
    assert r.returncode == 0 and "PASS" in r.stdout


def test_check_fails_a_grid_that_misses_elements():
    r = helpers_cli("check", "kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "2,3",
                    "--block", "16,16", "--mnk", "77,45,31", "--backend", "cpu")
    assert r.returncode == 1 and "FAIL" in r.stdout and "never written" in r.stdout


TF32_LAUNCH = ("--kernel", "sgemm_mma_sync", "--template", "32,32,16,16,16,2,1", "--grid", "3,2", "--block", "128,1",
               "--mnk", "61,67,53", "--shared-mem", "16384", "--backend", "cpu")


def test_check_verifies_a_tensor_core_kernel_to_tf32(tmp_path):
    """A stage-10 kernel is right to TF32's accuracy, not FP32's: the course's file is verified to TF32 by default,
    a copy elsewhere fails at FP32 with the hint to pass --precision tf32, and passes with it."""
    r = helpers_cli("check", "kernels/10_mma_sync.cu", *TF32_LAUNCH)
    assert r.returncode == 0 and "TF32's accuracy" in r.stdout and "PASS" in r.stdout, r.stdout + r.stderr
    (tmp_path / "mine.cu").write_text((ROOT / "kernels" / "10_mma_sync.cu").read_text())
    (tmp_path / "mma_sync.cuh").write_text((ROOT / "kernels" / "mma_sync.cuh").read_text())
    r = helpers_cli("check", str(tmp_path / "mine.cu"), *TF32_LAUNCH)
    assert r.returncode == 1 and "FAIL" in r.stdout and "--precision tf32" in r.stdout, r.stdout + r.stderr
    r = helpers_cli("check", str(tmp_path / "mine.cu"), *TF32_LAUNCH, "--precision", "tf32")
    assert r.returncode == 0 and "PASS" in r.stdout, r.stdout + r.stderr


def test_check_reports_compile_errors_with_exit_2(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k(int M, int N, int K, float alpha, const float* A,\n"
                   "                  const float* B, float beta, float* C) {\n  C[0] = nope;\n}\n")
    r = helpers_cli("check", str(src), "--kernel", "k", "--grid", "1", "--block", "1", "--mnk", "1,1,1",
                    "--backend", "cpu")
    assert r.returncode == 2 and "broken.cu" in r.stderr and ":3" in r.stderr and "Traceback" not in r.stderr


def test_check_reports_a_crashing_kernel_with_exit_3(tmp_path):
    src = tmp_path / "oob.cu"
    src.write_text("__global__ void k(int M, int N, int K, float alpha, const float* A,\n"
                   "                  const float* B, float beta, float* C) {\n"
                   "  C[threadIdx.x * 1000] = 1.0f;\n}\n")
    r = helpers_cli("check", str(src), "--kernel", "k", "--grid", "1", "--block", "32", "--mnk", "8,8,8",
                    "--backend", "cpu")
    assert r.returncode == 3 and "OutOfBoundsError" in r.stderr and "C[1000]" in r.stderr
    assert "oob.cu:3" in r.stderr and "Traceback" not in r.stderr


def test_check_rejects_malformed_arguments():
    r = helpers_cli("check", "kernels/02_naive.cu", "--kernel", "sgemm_naive", "--grid", "a,b",
                    "--block", "16", "--mnk", "1,1,1")
    assert r.returncode == 2 and "--grid takes whole numbers" in r.stderr


def test_dispatch_says_which_kernel_sgemm_runs_in_tf32_and_why():
    r = helpers_cli("dispatch", "--precision", "tf32", "--sizes", "512x512x16384,4096", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # the emulator chooses as for the GPU of the newest committed table, which the header names with its file
    header = re.match(r"Choices in TF32 for the (NVIDIA .+), from (results/dispatch_\S+\.json) \(this is the CPU emulator\)",
                      lines[0])
    assert header and (paths.ROOT / header.group(2)).is_file(), lines[0]
    assert "512x512x16384: 11_stream_k TF32 256x128 tile, SK_WAVES=1" in lines[1] and "shared out by stream-K" in lines[1]
    assert "4096x4096x4096: 11_stream_k TF32 256x128 tile, SK_WAVES=0" in lines[2] and "walked whole" in lines[2]
