"""What several stages' checkers read from traces of the kernel files, so that an edited kernel
gets answers that fit the edit."""

from __future__ import annotations

from helpers.core import stages
from helpers.measure import accesses


def traced_shared_bytes(variant_name: str, config) -> int:
    """Bytes of the shared arrays the kernel declares, as its trace reports them (stages 08 and 09)."""
    return sum(a.size for a in accesses.kernel_trace(stages.variant(variant_name), config).shared_variables)


def first_shared_load(variant_name: str, fields: dict, array: str, M: int = accesses.TRACE_SIZE):
    """The bank view of warp 0's first shared-memory load of `array` (stages 04, 05 and 06)."""
    v = stages.variant(variant_name)
    tr = accesses.kernel_trace(v, v.config(**fields), M)
    req = next(q for q in accesses.shared_requests(tr) if q.array == array)
    return accesses.bank_view(tr, req)


def words_and_wavefronts(view) -> tuple[tuple[int, int]]:
    """The checker arguments of a (distinct words, wavefronts) exercise, from its bank view."""
    return ((view.distinct_words, view.report.wavefronts),)
