"""The emulator fails what a GPU fails: one-line edits of 10_wgmma and 12_warp_specialized that break a PTX rule
(helpers/measure/mutations.py's MUTATIONS, and a few more written here) are each caught with their cause, a diagnosis
naming the line or a race naming both, never by a wrong result alone; the kernels as they are pass, on the shapes and
in the race check. A GPU gives such kernels wrong results only sometimes, or hangs."""

import re

import pytest

from helpers.measure import mutations as mu

pytestmark = [pytest.mark.emulator, pytest.mark.slow]

W, S = "10_wgmma", "12_warp_specialized"

# What each documented mutation must be answered with: how, and words of the cause.
EXPECTED = {
    f"{W}: fence.proxy.async before the tensor cores read the copies (ROUND = 0)":
        ("stopped", r"no fence_proxy_async_shared\(\) since they\s+landed"),
    f"{W}: fence.proxy.async before the tensor cores read the roundings (ROUND = 1)":
        ("stopped", r"fence_proxy_async_shared"),
    f"{W}: wgmma.fence before the products read the fragments": ("stopped", r"no wgmma_fence\(\) before it"),
    f"{W}: a stage refilled only after the products reading it completed":
        ("stopped", r"tensor cores are still reading"),
    f"{S}: wgmma.fence before the products read the fragments": ("stopped", r"no wgmma_fence\(\) before it"),
    f"{S}: expect_tx announces the bytes the copies deliver (4 KiB short)":
        ("stopped", r"announced 20480 bytes .* deliver 24576"),
    f"{S}: expect_tx announces the bytes the copies deliver (4 KiB long)":
        ("stopped", r"waits for 4096 more bytes than its copies delivered"),
    f"{S}: mbarrier_init visible to every thread before use (__syncthreads)":
        ("stopped", r"no __syncthreads\(\) between the initialization and this use"),
    f"{S}: mbarrier_init visible to the copy engine before use (fence_mbarrier_init)":
        ("stopped", r"not followed by fence_mbarrier_init\(\)"),
    f"{S}: setmaxnreg within the block's registers (inc<248>)":
        ("stopped", r"waits at setmaxnreg_inc<248> .* would hold 68608, more than the 64512"),
    f"{S}: a stage given back only after the products reading it completed":
        ("stopped", r"tensor cores are still reading"),
    f"{S}: a warp's lanes done with a stage before lane 0 gives it back (__syncwarp)":
        ("race", r"did not\s+wait for the reader to give the stage back"),
    f"{S}: ping-pong consumers wait for their turn before their products":
        ("race", r"without having waited \(mbarrier_wait\) for the barrier phase"),
    f"{S}: ping-pong empty barriers count one consumer's warps":
        ("stopped", r"no thread of the block can go on.*mbarrier_init at line \d+ still misses 4 of its 8 arrivals"),
    f"{S}: a block exits only after its peer's last multicast and arrival (cluster_sync)":
        ("stopped", r"this block \(rank 0 of the cluster\) finished while the tma_load_2d_multicast of block \(\d+,0,0\), rank 1"
                    r".*cluster_sync"),
    f"{S}: a peer's barriers used only after a cluster barrier follows their init":
        ("stopped", r"uses the barrier of block rank 1 of the cluster before that block's mbarrier_init ran"),
    f"{S}: a stage multicast into only once both blocks' consumers gave it back":
        ("stopped", r"(?s)deliver 32768.*multicast from block rank 0.*before this block's consumers gave it back"),
    f"{S}: expect_tx counts the peer's multicast half of A too":
        ("stopped", r"(?s)multicast copy into block rank 1.*expect_tx counts the peers' boxes.*tensor cores are still"),
    f"{S}: fence.proxy.async before a TMA store reads the staging buffer (EPILOGUE = 1)":
        ("race", r"generic proxy .* a TMA store reads it at line \d+ through the async proxy with no\s+"
                 r"fence_proxy_async_shared\(\)"),
    f"{S}: a barrier between the staging writes and the TMA store (EPILOGUE = 1)":
        ("race", r"a TMA store issued by thread \d+ reads it at line \d+ with no __syncthreads, __syncwarp, named "
                 r"barrier"),
    f"{S}: a staging buffer rewritten only after its TMA store read it (EPILOGUE = 1)":
        ("stopped", r"tma_store_2d reads .* was written after the store was issued and before the wait"),
    f"{S}: the TMA stores waited for before the block ends (EPILOGUE = 1)":
        ("stopped", r"finished with the TMA store of this line not yet waited for"),
    "11_stream_k: a warp's lanes done with a stage before lane 0 gives it back (__syncwarp)":
        ("race", r"did not\s+wait for the reader to give the stage back"),
}


def test_every_documented_mutation_has_its_expected_answer():
    assert set(EXPECTED) == set(mu.MUTATIONS)


def _line_of(kernel: str, text: str) -> int:
    lines = [n for n, ln in enumerate(mu.stages.variant(kernel).path.read_text().splitlines(), 1) if text in ln]
    assert len(lines) == 1, (text, lines)
    return lines[0]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_documented_mutation_is_caught_with_its_cause(cpu_backend, name):
    how, words = EXPECTED[name]
    found = mu.examine_mutation(mu.MUTATIONS[name])
    assert found.how == how, found
    assert re.search(words, found.message, re.S), found.message


@pytest.mark.parametrize("name", [n for n in EXPECTED if EXPECTED[n][0] == "race" or "fence.proxy" in n])
def test_the_race_check_alone_catches_the_fence_and_ordering_mutations(cpu_backend, name):
    """Traced blocks leave shared memory to the race check: with no untraced run first, it names both lines."""
    found = mu.examine_mutation(mu.MUTATIONS[name], shapes=())
    assert found.how == "race", found
    assert re.search(r"line \d+.*line \d+", found.message, re.S)


@pytest.mark.parametrize("kernel, config", [(W, {}), (W, {"BN": 128, "ROUND": 1}), (S, {}), (S, {"CONSUMERS": 2}),
                                            (S, mu.PINGPONG), (S, {"CLUSTER": 2}), (S, {**mu.PINGPONG, "PERSISTENT": 0}),
                                            (S, {"EPILOGUE": 1}), (S, {"CONSUMERS": 2, "EPILOGUE": 1}),
                                            ("11_stream_k", {}), ("11_stream_k", {"CONSUMERS": 2, "SLICES": 3})])
def test_the_kernels_as_they_are_pass(cpu_backend, kernel, config):
    found = mu.examine(kernel, config=mu.small_config(kernel, **config))
    assert found.how == "passed", found


F10 = ("    wgmma_fence();  // the fragments are written before the tensor cores read them\n", "")
F12 = ("      wgmma_fence();\n", "")

# Edits not in MUTATIONS (several lines where the rule needs a move), with the words of their cause.
MORE = [
    (W, "fence moved above the fragment loads",
     [F10, ("    const float* bs = as + A_FLOATS;\n", "    const float* bs = as + A_FLOATS;\n    wgmma_fence();\n")], {},
     "stopped", r"A fragment of this wgmma_m64k8_tf32 was written since the\s+warpgroup's last wgmma_fence"),
    (W, "one set of fragments for every tile", [("    multiply_tile(t + 1, 1);", "    multiply_tile(t + 1, 0);")], {},
     "stopped", r"wrote the A fragment of the wgmma_m64k8_tf32 at line \d+ while it was\s+in flight"),
    (W, "no barrier before the refill", [("    __syncthreads();                    // everyone's copies landed; "
                                          "every product of tile t-2 is done", "")], {"BN": 128},
     "stopped", r"tensor cores are still reading"),
    (W, "the proxy fence after the barrier",
     [("    fence_proxy_async_shared();         // the copies (and roundings) are visible to the tensor cores\n"
       "    __syncthreads();                    // everyone's copies landed; every product of tile t-2 is done\n",
       "    __syncthreads();\n    fence_proxy_async_shared();\n")], {"BN": 128},
     "race", r"no fence_proxy_async_shared\(\) by thread \d+"),
    (W, "the proxy fence before the copies land",
     [("    __pipeline_wait_prior(STAGES - 3);  // this thread's copies of tile t have landed\n"
       "    wgmma_wait_group<1>();              // this warpgroup's products of tile t-2 have completed\n"
       "    fence_proxy_async_shared();         // the copies (and roundings) are visible to the tensor cores\n",
       "    fence_proxy_async_shared();\n    __pipeline_wait_prior(STAGES - 3);\n    wgmma_wait_group<1>();\n")], {},
     "stopped", r"no fence_proxy_async_shared\(\) since they\s+landed"),
    (W, "too short a wait for the copies", [("    __pipeline_wait_prior(STAGES - 3);  // this thread's copies of "
                                             "tile t have landed", "    __pipeline_wait_prior(STAGES - 2);")], {},
     "stopped", r"changed between its\s+issue and the wgmma_wait_group"),
    (W, "rounding the tile being multiplied", [("      round_a_tile((t + 1) % STAGES);",
                                                "      round_a_tile(t % STAGES);")], {"ROUND": 1},
     "stopped", r"changed between its\s+issue and the wgmma_wait_group"),
    (W, "the final wait leaves a group running", [("  wgmma_wait_group<0>();  // every product has completed: the "
                                                   "accumulators are final", "  wgmma_wait_group<1>();")], {},
     "stopped", r"finished with wgmma products still running"),
    (S, "the consumers wait for the wrong parity", [("      mbarrier_wait(&full[s], it / STAGES & 1);",
                                                     "      mbarrier_wait(&full[s], (it / STAGES & 1) ^ 1);")], {},
     "race", r"without having waited \(mbarrier_wait\) for the barrier phase"),
    (S, "an arrival on the first k-tile too", [("      if (!first && lane == 0) give_back",
                                                "      if (lane == 0) give_back")], {},
     "stopped", r"tensor cores are still reading"),
    (S, "the accumulators read before the last group completes",
     [("    wgmma_wait_group<0>();  // every product has completed: the accumulators are final",
       "    wgmma_wait_group<1>();")], {}, "stopped", r"products still running|while a wgmma adding into them"),
    (S, "no registers given back", [("    if (CONSUMERS == 2) setmaxnreg_dec<40>();", "")], {"CONSUMERS": 2},
     "stopped", r"waits at setmaxnreg_inc<232>"),
    (S, "a decrease written as an increase", [("setmaxnreg_dec<40>();", "setmaxnreg_inc<40>();")], {"CONSUMERS": 2},
     "stopped", r"setmaxnreg_inc<40> would lower the warpgroup's 168 registers"),
    (S, "the fence moved above the fragment loads",
     [F12, ("      const float* bs = as + A_FLOATS + box * 32 * BK;\n",
            "      const float* bs = as + A_FLOATS + box * 32 * BK;\n      wgmma_fence();\n")], {},
     "stopped", r"written since the\s+warpgroup's last wgmma_fence"),
    (S, "ping-pong: a consumer counting only its own k-tiles in the ring",
     [("      it = j * numK;  // the producer fills the ring in the block's tile order: the other consumer's tiles too\n",
       "\n")], mu.PINGPONG, "stopped", r"no thread of the block can go on.*still misses 4 of its 4 arrivals"),
    (S, "ping-pong: a consumer handing the turn to itself",
     [("mbarrier_arrive(&turn[1 - c]);", "mbarrier_arrive(&turn[c]);")], mu.PINGPONG,
     "stopped", r"no thread of the block can go on.*still misses 1 of its 1 arrivals"),
    (S, "ping-pong without the turns, a block per two tiles",
     [("      if (j > 0) mbarrier_wait(&turn[c], (j - 1) / 2 & 1);", "      if (false) mbarrier_wait(&turn[c], 0);")],
     {**mu.PINGPONG, "PERSISTENT": 0}, "stopped", r"tensor cores are still reading"),
    (S, "TMA stores never committed into a group", [("            tma_store_commit_group();\n", "")],
     {"EPILOGUE": 1}, "stopped", r"never committed into a group"),
    (S, "a wait that leaves the last store reading the buffer about to be rewritten",
     [("if (issuer) tma_store_wait_read<0>();", "if (issuer) tma_store_wait_read<1>();")], {"EPILOGUE": 1},
     "stopped", r"was written after the store was issued and before the wait"),
    (S, "a warpgroup's barrier counting a thread short of whole warps",
     [("named_barrier_sync(STORE_BARRIER + c, 128);", "named_barrier_sync(STORE_BARRIER + c, 127);")],
     {"EPILOGUE": 1}, "stopped", r"a multiple of 32"),
    (S, "a warpgroup's barrier waiting for the block's every thread",
     [("named_barrier_sync(STORE_BARRIER + c, 128);", "named_barrier_sync(STORE_BARRIER + c, 256);")],
     {"EPILOGUE": 1}, "stopped", r"waits at a named barrier \(line \d+\).*Barrier 1 \(named_barrier_sync at line \d+\) "
                                 r"has 4 whole warps of the 256 threads"),
    (S, "both warpgroups' stores on one barrier of 128",
     [("named_barrier_sync(STORE_BARRIER + c, 128);", "named_barrier_sync(STORE_BARRIER, 128);")],
     {"CONSUMERS": 2, "EPILOGUE": 1}, "race", r"a TMA store issued by thread \d+ reads it"),
    (S, "a stage's bytes counted as A's alone", [("  constexpr unsigned STAGE_BYTES = 4 * STAGE_FLOATS;",
                                                   "  constexpr unsigned STAGE_BYTES = 4 * A_FLOATS;")], {},
     "stopped", r"announced 16384 bytes"),
]


@pytest.mark.parametrize("kernel, what, edits, config, how, words", MORE, ids=[m[1] for m in MORE])
def test_more_broken_rules_are_caught_with_their_cause(cpu_backend, kernel, what, edits, config, how, words):
    found = mu.examine(kernel, tuple(edits), mu.small_config(kernel, **config))
    assert found.how == how, found
    assert re.search(words, found.message, re.S), found.message


@pytest.mark.parametrize("kernel, edits", [
    (W, [("    wgmma_wait_group<1>();              // this warpgroup's products of tile t-2 have completed",
          "    wgmma_wait_group<0>();")]),
    (S, [("      wgmma_wait_group<1>();  // the products of the k-tile before have completed",
          "      wgmma_wait_group<0>();")]),
], ids=["10_wgmma waits for every product", "12 waits for every product"])
def test_stricter_waits_are_not_flagged(cpu_backend, kernel, edits):
    assert mu.examine(kernel, tuple(edits)).how == "passed"


def test_a_diagnosis_names_the_line_it_is_about(cpu_backend):
    m = mu.MUTATIONS[f"{S}: expect_tx announces the bytes the copies deliver (4 KiB short)"]
    found = mu.examine_mutation(m)
    line = _line_of(S, "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);")
    assert f"12_warp_specialized.cu:{line}:" in found.message


@pytest.mark.parametrize("kernel", [W, S])
def test_the_epilogue_batches_are_a_choice_not_a_correctness_matter(cpu_backend, kernel):
    """tools/measure_hopper_beta.py times C_BATCH = 1 against the kernels' 8 by editing that one line: right either way
    (the shapes include beta != 0, where C is read a batch at a time, and the catalogue's beta = 0 never reads it)."""
    from helpers.measure import verify
    found = mu.examine(kernel, (("constexpr int C_BATCH = 8;", "constexpr int C_BATCH = 1;"),),
                       shapes=(*mu.SHAPES, verify.shape("beta = 0 (poisoned C)")))
    assert found.how == "passed", found
