"""`python -m helpers trace`: the per-line memory table, the race check and its exit codes."""

from __future__ import annotations

import re
import subprocess
import sys

from helpers.core import paths

ROOT = paths.ROOT
PATTERNS = "tests/kernels/memory_patterns.cu"

# line, access (space op array [bytes]), requests, sectors/req, ideal, ways, wavefronts, wf/req, ideal,
# vs ideal, source
ROW = re.compile(r"^\s*(\d*)\s+((?:dynamic )?(?:global|shared) (?:load|store|atomic) \w+(?: \(\d+ B\))?)\s+"
                 r"(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*(.*)$")


def helpers_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "helpers", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def line_of(path: str, text: str) -> int:
    (number,) = [n for n, line in enumerate((ROOT / path).read_text().splitlines(), 1) if text in line]
    return number


def marked(tag: str) -> int:
    (number,) = [n for n, line in enumerate((ROOT / PATTERNS).read_text().splitlines(), 1)
                 if line.rstrip().endswith(f"// LINE: {tag}")]
    return number


def table(stdout: str) -> dict[tuple[int, str], dict]:
    """(line, access) -> the row's cells; rows without a line number belong to the one above."""
    rows, line = {}, None
    for text in stdout.splitlines():
        m = ROW.match(text)
        if not m:
            continue
        line = int(m.group(1)) if m.group(1) else line
        keys = ("requests", "sectors/req", "ideal sectors", "ways", "wavefronts", "wf/req", "ideal wf",
                "vs ideal", "source")
        rows[(line, m.group(2))] = dict(zip(keys, m.groups()[2:]))
    return rows


def trace_cli(file, kernel, grid, block, mnk="64,64,64", *extra):
    return helpers_cli("trace", file, "--kernel", kernel, "--grid", grid, "--block", block, "--mnk", mnk,
                       "--backend", "cpu", *extra)


def test_the_table_of_the_coalesced_naive_kernel():
    path = "kernels/02_naive_coalesced.cu"
    r = trace_cli(path, "sgemm_naive_coalesced", "2,2", "32,32")
    assert r.returncode == 0, r.stderr
    assert "traced blocks 0, 3 of 4 on the CPU emulator" in r.stdout
    rows = table(r.stdout)
    inner, last = line_of(path, "acc += A[row * K + k]"), line_of(path, "C[row * N + col] = alpha")
    assert set(rows) == {(inner, "global load A"), (inner, "global load B"), (last, "global load C"),
                         (last, "global store C")}
    # 2 blocks x 32 warps x K = 64 steps; one load and one store of C per warp
    # A[row*K+k]: one element for the warp -> 1 sector; B[k*N+col], C: 32 consecutive floats -> 4
    expected = {"global load A": ("4096", "1.0", "1.0"), "global load B": ("4096", "4.0", "4.0"),
                "global load C": ("64", "4.0", "4.0"), "global store C": ("64", "4.0", "4.0")}
    for (line, access), cells in rows.items():
        assert (cells["requests"], cells["sectors/req"], cells["ideal sectors"]) == expected[access]
        assert cells["ways"] == cells["wavefronts"] == "-" and cells["vs ideal"] == "1.0x"
    assert rows[(inner, "global load A")]["source"].startswith("for (int k = 0; k < K; ++k) acc += A[row * K + k]")
    assert rows[(last, "global load C")]["source"].startswith("C[row * N + col] = alpha * acc")


def test_the_table_shows_bank_conflicts():
    r = trace_cli(PATTERNS, "shared_patterns", "1", "32")
    assert r.returncode == 0, r.stderr
    rows = table(r.stdout)
    # s[32t]: every lane in bank 0, 32 different words -> 32-way, 32 wavefronts for an ideal 1
    cells = rows[(marked("stride32"), "shared load s")]
    assert (cells["requests"], cells["ways"], cells["wavefronts"], cells["wf/req"], cells["ideal wf"],
            cells["vs ideal"]) == ("1", "32", "32", "32.0", "1.0", "32.0x")
    # float4 s4[t]: a quarter-warp at a time, 4 conflict-free wavefronts, the ideal for 16 bytes
    cells = rows[(marked("float4"), "shared load s (16 B)")]
    assert (cells["ways"], cells["wavefronts"], cells["ideal wf"], cells["vs ideal"]) == ("1", "4", "4.0", "1.0x")


def test_racecheck_flags_the_race_with_both_lines():
    r = trace_cli(PATTERNS, "race", "1", "64", "64,64,64", "--racecheck")
    assert r.returncode == 1, r.stdout + r.stderr
    write, read = marked("race_write"), marked("race_read")
    races = [line for line in r.stdout.splitlines() if line.strip().startswith("race:")]
    assert races and all(f"at line {write}" in x and f"at line {read}" in x for x in races), r.stdout
    assert re.search(r"thread \d+ stores s .* thread \d+ loads it", races[0])
    assert "Traceback" not in r.stderr


def test_racecheck_passes_the_fixed_twin():
    r = trace_cli(PATTERNS, "race_fixed", "1", "64", "64,64,64", "--racecheck")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no races and no reads of unwritten shared memory" in r.stdout


def test_racecheck_flags_an_unwritten_read():
    r = trace_cli(PATTERNS, "unwritten", "1", "32", "64,64,64", "--racecheck")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"loads sums (shared word 0) at line {marked('unwritten_read')} before any thread" in r.stdout
    assert trace_cli(PATTERNS, "unwritten_fixed", "1", "32", "64,64,64", "--racecheck").returncode == 0


def test_trace_reports_compile_errors_with_exit_2(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void k(int M, int N, int K, float alpha, const float* A,\n"
                   "                  const float* B, float beta, float* C) {\n  C[0] = nope;\n}\n")
    r = helpers_cli("trace", str(src), "--kernel", "k", "--grid", "1", "--block", "1", "--mnk", "1,1,1")
    assert r.returncode == 2 and "broken.cu" in r.stderr and ":3" in r.stderr and "Traceback" not in r.stderr


def test_trace_reports_a_crashing_kernel_with_exit_3(tmp_path):
    src = tmp_path / "oob.cu"
    src.write_text("__global__ void k(int M, int N, int K, float alpha, const float* A,\n"
                   "                  const float* B, float beta, float* C) {\n"
                   "  C[threadIdx.x * 1000] = 1.0f;\n}\n")
    r = helpers_cli("trace", str(src), "--kernel", "k", "--grid", "1", "--block", "32", "--mnk", "8,8,8")
    assert r.returncode == 3 and "OutOfBoundsError" in r.stderr and "C[1000]" in r.stderr
    assert "oob.cu:3" in r.stderr and "Traceback" not in r.stderr


def test_trace_rejects_blocks_outside_the_grid():
    r = trace_cli("kernels/02_naive_coalesced.cu", "sgemm_naive_coalesced", "2,2", "32,32", "64,64,64",
                  "--blocks", "1,4")
    assert r.returncode == 2 and "--blocks" in r.stderr and "0 to 3" in r.stderr and "Traceback" not in r.stderr
    r = trace_cli("kernels/02_naive_coalesced.cu", "sgemm_naive_coalesced", "2,2", "32,32", "64,64,64",
                  "--blocks", "2")
    assert r.returncode == 0 and "traced block 2 of 4" in r.stdout
    assert table(r.stdout)[(line_of("kernels/02_naive_coalesced.cu", "acc += A["), "global load A")]["requests"] == "2048"
