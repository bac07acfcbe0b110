"""The search space of autotuning (stage 11): which tile configurations a search of a kernel tries,
and which rule leaves each of the others out. No GPU needed.

Each field of the variant's configuration dataclass takes its values from RANGES (powers of two for
tile sizes, small counts for STAGES and MIN_BLOCKS); a field without a range keeps the registered
default's value. Three rules drop what cannot run or cannot be fast:
  - the kernel's own rules (the configuration's validate(), checked as it is built);
  - 64 to 1024 threads per block (fewer leave the SM's four schedulers short of warps);
  - MIN_BLOCKS blocks (1 without the field) fit on one SM of the architecture, as
    helpers.core.arch.occupancy counts shared memory and registers, registers counted at their
    floor: a thread's TM x TN accumulators plus the TM + TN values it multiplies them with. A floor,
    so nothing that could fit is dropped; ptxas's real count comes later.
The product of the ranges holds thousands of valid configurations for stages 08-09, too many to
time. The search keeps those within `radius` steps of the registered default (a step moves one
field to the next value of its range), nearest first. The default is always a candidate, so a
search can confirm it or beat it, never lose it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

from helpers.core import stages
from helpers.core.arch import arch_name, occupancy
from helpers.core.configs import KernelConfig
from helpers.core.errors import InputError
from helpers.core.stages import Variant
from helpers.run import backend


def _powers(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**i for i in range(lo.bit_length() - 1, hi.bit_length()) if lo <= 2**i <= hi)


# field name -> the values the search tries (the default's value is added if missing)
RANGES: dict[str, tuple[int, ...]] = {
    "block_x": _powers(1, 1024), "block_y": _powers(1, 1024),   # stage 02
    "tile": _powers(1, 32),                                        # stage 03
    "BM": _powers(16, 256), "BN": _powers(16, 256), "BK": _powers(4, 64),
    "WM": _powers(8, 256), "WN": _powers(8, 256),
    "TM": _powers(1, 32), "TN": _powers(1, 32),
    "PAD": (0, 1, 2, 4, 8),
    "STAGES": (2, 3, 4),
    "MIN_BLOCKS": (1, 2, 3, 4),
}
THREADS = (64, 1024)
DEFAULT_RADIUS = 2

# ---- the search space ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Rejected:
    """A configuration of the ranges that is not a candidate, and the rule that dropped it."""
    label: str
    rule: str       # "kernel rule", "threads" or "fits on an SM"
    reason: str


@dataclass(frozen=True)
class SearchSpace:
    variant: str
    arch: str
    radius: int | None
    ranges: dict[str, tuple[int, ...]]
    fixed: tuple[str, ...]                 # fields without a range: kept at the default's value
    configs: tuple[KernelConfig, ...]      # the candidates, the default first, then nearest first
    distances: tuple[int, ...]             # steps of each candidate from the default
    rejected: tuple[Rejected, ...]

    def summary(self) -> str:
        default = self.configs[0]
        where = "in the whole space" if self.radius is None else f"within {self.radius} steps of the registered default"
        lines = [f"{self.variant}: {len(self.configs)} candidates {where} ({default.label()}), for {self.arch}"]
        for name, values in self.ranges.items():
            if name in self.fixed:
                lines.append(f"  {name}: kept at {values[0]} (no range; pass ranges={{'{name}': (...)}} to search it)")
            else:
                lines.append(f"  {name}: {', '.join(map(str, values))}")
        by_rule: dict[str, list[Rejected]] = {}
        for r in self.rejected:
            by_rule.setdefault(r.rule, []).append(r)
        for rule, found in by_rule.items():
            lines.append(f"  left out by {rule}: {len(found)}, e.g. {found[0].label}: {found[0].reason}")
        return "\n".join(lines)



def _field_ranges(v: Variant, ranges: dict | None, arch: str) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    out, fixed = {}, []
    for f in dataclasses.fields(v.config_type):
        default = getattr(v.default_for(arch), f.name)
        values = (ranges or {}).get(f.name, RANGES.get(f.name))
        if values is None:
            values = (default,)
            fixed.append(f.name)
        out[f.name] = tuple(sorted(set(values) | {default}))
    return out, tuple(fixed)


def _neighbours(ranges: dict[str, tuple[int, ...]], start: dict[str, int], radius: int | None):
    """(distance, values) of every combination of the ranges within `radius` steps of `start`."""
    names = list(ranges)

    def walk(i: int, spent: int, chosen: tuple):
        if i == len(names):
            yield spent, dict(zip(names, chosen))
            return
        values = ranges[names[i]]
        here = values.index(start[names[i]])
        for j, x in enumerate(values):
            cost = spent + abs(j - here)
            if radius is None or cost <= radius:
                yield from walk(i + 1, cost, chosen + (x,))
    return walk(0, 0, ())


def register_floor(config: KernelConfig) -> int:
    """The fewest registers a thread can do with: its TM x TN accumulators and the TM + TN values of
    A and B it multiplies them with (TN = 1 in stage 04); 0 for configurations without a thread tile."""
    tm = getattr(config, "TM", None)
    if tm is None:
        return 0
    tn = getattr(config, "TN", 1)
    return tm * tn + tm + tn


def _search_rule(config: KernelConfig, arch: str) -> tuple[str, str] | None:
    """(rule, reason) when the search leaves this valid configuration out, else None."""
    threads = config.threads()
    if not THREADS[0] <= threads <= THREADS[1]:
        return "threads", f"{threads} threads per block; the search keeps {THREADS[0]} to {THREADS[1]}"
    need = getattr(config, "MIN_BLOCKS", 1)
    try:
        occ = occupancy(arch, threads, register_floor(config), config.static_shared_bytes(),
                                  config.shared_bytes())
    except ValueError as e:
        return "fits on an SM", str(e)
    if occ.active_blocks < need:
        return "fits on an SM", (f"{occ.describe().rstrip('.')}, with registers at their floor of "
                                 f"{register_floor(config)} per thread; MIN_BLOCKS = {need}")
    return None


def does_not_fit(config: KernelConfig, arch: str | None = None) -> str | None:
    """Why not even one block of this valid configuration fits on an SM of `arch` (default:
    backend.arch()), shared memory and registers counted as the search counts them (registers at
    their floor); None when one does. The tile explorer's sliders offer only what fits."""
    arch = arch_name(arch or backend.arch())
    try:
        occ = occupancy(arch, config.threads(), register_floor(config), config.static_shared_bytes(),
                        config.shared_bytes())
    except ValueError as e:      # more registers a thread than the architecture has, say: it cannot fit
        return str(e)
    return None if occ.active_blocks else occ.describe()


def search_space(variant, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
                 arch: str | None = None) -> SearchSpace:
    """The candidates of a variant (a Variant or its name) and what was left out, by which rule.
    radius=None searches every combination of the ranges (for stages 08-09, hundreds of thousands
    to build: slow). `ranges` replaces RANGES for the fields it names. `arch`: the GPU architecture
    the configurations must fit (default: backend.arch(), the learner's GPU, else TBT_ARCH or sm_90);
    the search starts from the variant's default for it."""
    v = stages.resolve(variant)
    if radius is not None and (isinstance(radius, bool) or not isinstance(radius, int) or radius < 0):
        raise InputError(f"radius = {radius!r}: a search goes a whole number of steps from the registered default, "
                         f"from 0 up (0: the default alone), or radius=None for every combination. Fix: e.g. 2.")
    arch = arch_name(arch or backend.arch())
    field_ranges, fixed = _field_ranges(v, ranges, arch)
    start = {f: getattr(v.default_for(arch), f) for f in field_ranges}
    found, rejected = [], []
    for distance, values in sorted(_neighbours(field_ranges, start, radius),
                                   key=lambda dv: (dv[0], tuple(dv[1].values()))):
        label = ", ".join(f"{k}={x}" for k, x in values.items())
        try:
            config = v.config_type(**values)
        except ValueError as e:
            rejected.append(Rejected(label, "kernel rule", str(e).split("): ", 1)[-1]))
            continue
        broken = _search_rule(config, arch) if distance else None   # the default is always kept
        if broken:
            rejected.append(Rejected(label, *broken))
        else:
            found.append((config, distance))
    return SearchSpace(v.name, arch, radius, field_ranges, fixed, tuple(c for c, _ in found),
                       tuple(d for _, d in found), tuple(rejected))


def candidates(variant, radius: int | None = DEFAULT_RADIUS, ranges: dict | None = None,
               arch: str | None = None) -> list[KernelConfig]:
    """The configurations a search of this variant tries: the registered default first, then the
    valid ones nearest to it (see search_space for the rules)."""
    return list(search_space(variant, radius, ranges, arch).configs)



# ---- the search at a glance (notebook 11) -------------------------------------------------------------
RULES = ("kernel rule", "threads", "fits on an SM")   # what drops a configuration, in the order checked


def left_out_by(variant, arch: str | None = None, **fields) -> tuple[str, str] | None:
    """(rule, reason) when a search leaves this configuration out, else None: it is a candidate of any
    search that reaches it. Fields not given keep the registered default's value for `arch` (default:
    backend.arch()). (A search keeps its own default whatever the rules say; this function applies them
    to every configuration.)"""
    v = stages.resolve(variant)
    arch = arch_name(arch or backend.arch())
    try:
        config = v.config_type(**{**asdict(v.default_for(arch)), **fields})
    except ValueError as e:
        return "kernel rule", str(e).split("): ", 1)[-1]
    return _search_rule(config, arch)


def space_counts(variants=None, radius: int | None = DEFAULT_RADIUS, arch: str | None = None) -> list[dict]:
    """Per variant (default: every registered one): how many combinations its ranges hold, how many
    lie within `radius` steps of the default, how many of those are candidates and how many each
    rule dropped."""
    out = []
    for v in (variants or stages.variants()):
        space = search_space(v, radius, arch=arch)
        combinations = 1
        for values in space.ranges.values():
            combinations *= len(values)
        row = {"variant": space.variant, "fields searched": len(space.ranges) - len(space.fixed),
               "in the ranges": combinations, "reached": len(space.configs) + len(space.rejected),
               "candidates": len(space.configs)}
        row.update({f"left out: {rule}": sum(r.rule == rule for r in space.rejected) for rule in RULES})
        out.append(row)
    return out


