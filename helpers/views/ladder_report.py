"""The capstone ladder (stage 11): every stage's kernels measured in one GPU run, as a chart, a
roofline, a table of what each step bought, and the results table of docs/results.md.

    lad = load_ladder()                 # the newest committed ladder (see newest_ladder)
    plot_ladder(lad)                    # TFLOP/s and % of cuBLAS of every kernel
    plot_ladder_roofline(lad)           # every kernel on the GPU's roofline
    steps_table(lad)                    # each stage's best kernel against the previous stage's
    print(results_table(lad))           # the table of docs/results.md
    regenerate()                        # the table of docs/results.md and figures/11_autotuning_*.svg, after a new ladder

A ladder is the JSON `python -m helpers ladder --json FILE` writes: {"size", "backend", "rows",
"provenance"}, each row a kernel's variant, config, verified, median_ms, tflops and pct_cublas,
cuBLAS in a row of its own (in "rows" or under "cublas"). Rows without "precision" are FP32; a
TF32 kernel (stage 10) says "precision": "tf32", its pct_cublas is against cuBLAS in TF32 (a
"cublas_tf32" row) and pct_cublas_fp32 against cuBLAS in FP32. Nothing here computes a timing:
every number drawn or tabled is read from the file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib

from helpers.views import roofline_plot
from helpers.views.style import SVG_RC, save_svg
from helpers.core.paths import ROOT
from helpers.measure import intensity
from helpers.measure import roofline
from helpers.core import stages
from helpers.core import results_files
from helpers.core.errors import CourseError, ResultsFileError
from helpers.core.paths import RESULTS_DIR
from helpers.core.paths import RESULTS_PAGE
from helpers.core.markdown import Markdown
from helpers.core.paths import FIGURES_DIR
from helpers.core.arch import BANKS, FLOAT_BYTES

LADDER_GLOB = "gpu_*/ladder.json"
BEGIN = "<!-- results-table: begin (made by `python -m helpers results-table --write`; do not edit) -->"
END = "<!-- results-table: end -->"
REGENERATE = "python -m helpers results-table --write"
PRECISION_NAMES = {"fp32": "FP32", "tf32": "TF32"}


# ---- which ladder, and reading it ------------------------------------------------------------------
def newest_ladder(directory: Path | str = RESULTS_DIR) -> Path:
    """The ladder docs/results.md, the figures and notebook 11 show. Of results/gpu_*/ladder.json (each
    written by tools/gpu_suite.sh in the session that also ran the whole test suite on that GPU),
    the one whose provenance date is the latest; ties go to the later folder name. So a new GPU run
    takes over as soon as it is committed, and the tests then name the command that regenerates
    what is made from it, instead of a pointer file that could be forgotten."""
    found = []
    for path in Path(directory).glob(LADDER_GLOB):
        data = results_files.read_json(path)    # a damaged ladder stops here, named, rather than being passed over
        try:
            date = str(data["provenance"]["date"])
        except (KeyError, TypeError):
            continue   # not a ladder with provenance: not a measurement the course shows
        found.append((date, path.parent.name, path))
    if not found:
        raise CourseError(f"no ladder with provenance in {directory}/{LADDER_GLOB}. On a GPU, "
                          f"tools/gpu_suite.sh results/gpu_<gpu>_<date> writes one.")
    return max(found)[2]


def _precision(row: dict) -> str:
    if row.get("precision"):
        return str(row["precision"])
    return "tf32" if "tf32" in str(row.get("variant", "")) else "fp32"


@dataclass(frozen=True)
class Ladder:
    path: Path
    size: int
    provenance: dict
    kernels: tuple[dict, ...]          # every non-cuBLAS row, in the file's order
    cublas: dict[str, dict]            # precision -> cuBLAS row

    @property
    def gpu(self) -> str:
        return str(self.provenance.get("gpu", "an unnamed GPU"))

    @property
    def date(self) -> str:
        return str(self.provenance.get("date", "an unrecorded date"))[:10]

    @property
    def source(self) -> str:
        """The file, relative to the repository when inside it."""
        try:
            return str(self.path.resolve().relative_to(ROOT))
        except ValueError:
            return str(self.path)

    @property
    def repeats(self) -> set:
        return {r.get("repeats") for r in self.kernels if r.get("repeats")}

    def label(self) -> str:
        """Where, when, how: for a note under a figure or above a table."""
        p = self.provenance
        versions = ", ".join(f"{name} {p[k]}" for k, name in (("driver", "driver"), ("cupy", "CuPy")) if p.get(k))
        cc = f"compute capability {p['compute_capability']}" if p.get("compute_capability") else ""
        detail = "; ".join(x for x in (cc, versions) if x)
        repeats = self.repeats
        median = f", median of {repeats.pop()} launches" if len(repeats) == 1 else ""
        return (f"Measured on {self.gpu}" + (f" ({detail})" if detail else "") + f" on {self.date}, "
                f"M = N = K = {self.size}{median}, each kernel verified on the shape catalogue first. "
                f"Source: `{self.source}`" + (f", made by `{p['command']}`" if p.get("command") else "") + ".")


def load_ladder(path: Path | str | None = None) -> Ladder:
    """A ladder file (default: newest_ladder())."""
    path = Path(path) if path else newest_ladder()
    data = results_files.read_json(path)
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path} holds {type(data).__name__}, not a ladder (a JSON object with its rows).")
    if not isinstance(data.get("provenance"), dict) or not data["provenance"].get("gpu"):
        raise CourseError(f"{path} names no GPU in its provenance: the course shows GPU measurements only, "
                          f"from `python -m helpers ladder --json FILE` on a GPU.")
    rows = [r for r in data.get("rows", []) if isinstance(r, dict)]
    rows += [x for x in data.values() if isinstance(x, dict) and str(x.get("variant", "")).startswith("cublas")]
    cublas = {_precision(r): r for r in rows if str(r.get("variant", "")).startswith("cublas")}
    kernels = tuple(r for r in rows if not str(r.get("variant", "")).startswith("cublas"))
    if "fp32" not in cublas:
        raise CourseError(f"{path} has no cuBLAS row (cublas_sgemm): its % of cuBLAS cannot be checked.")
    _check_rows(path, kernels, cublas)
    size = data.get("size") or (kernels[0].get("M") if kernels else None)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ResultsFileError(f"{path}: the problem size is {size!r}: a ladder names it in \"size\" (or in its rows' "
                               f"\"M\"), a whole number from 1 up. Fix: restore the file, or write it again with "
                               f"`python -m helpers ladder --json FILE` on a GPU.")
    return Ladder(path, size, data["provenance"], kernels, cublas)


def _check_rows(path: Path, kernels: tuple[dict, ...], cublas: dict[str, dict]) -> None:
    """Every row names its kernel; cuBLAS and every timed kernel have positive, finite timings and %."""
    for i, r in enumerate(kernels):
        results_files.require(path, r, "variant", str, f"row {i + 1}")
        if r.get("verified", True) is not False:   # a verified kernel of a GPU ladder was timed
            results_files.check_timings(path, r, f"row {i + 1} ({r['variant']})",
                                        ("tflops", "pct_cublas", *(("median_ms",) if "median_ms" in r else ())))
    for r in cublas.values():
        results_files.check_timings(path, r, f"the cuBLAS row ({r.get('variant')})", ("tflops",))


def _stage_title(variant_name: str) -> str:
    sid = variant_name[:2]
    try:
        return f"{sid} {stages.stage(sid).title}"
    except KeyError:
        return sid


def _timed(row: dict) -> bool:
    return row.get("verified", True) is not False and row.get("tflops") is not None


def _pct(row: dict) -> str:
    """% of cuBLAS in the row's precision; a TF32 row also against FP32 cuBLAS."""
    text = f"{row['pct_cublas']:.1f}"
    if _precision(row) != "fp32" and row.get("pct_cublas_fp32") is not None:
        text += f" of {PRECISION_NAMES.get(_precision(row), _precision(row))} ({row['pct_cublas_fp32']:.1f} of FP32)"
    return text


# ---- the table of docs/results.md ------------------------------------------------------------------------------
def results_table(ladder: Ladder | None = None) -> str:
    """Markdown: where and when it was measured, then one row per cuBLAS and per kernel."""
    lad = ladder or load_ladder()
    lines = [lad.label(), "",
             "| stage | kernel | configuration | TFLOP/s | % of cuBLAS |", "|---|---|---|---:|---:|"]
    for precision, r in lad.cublas.items():
        name = PRECISION_NAMES.get(precision, precision)
        lines.append(f"| cuBLAS | `{r['variant']}` ({name}) | {r.get('config', 'cupy.matmul')} | {r['tflops']:.2f} | 100.0 |")
    for r in lad.kernels:
        precision = _precision(r)
        kernel = f"`{r['variant']}`" + (f" ({PRECISION_NAMES.get(precision, precision)})" if precision != "fp32" else "")
        speed, pct = (f"{r['tflops']:.2f}", _pct(r)) if _timed(r) else ("not verified", "-")
        lines.append(f"| {_stage_title(r['variant'])} | {kernel} | {r.get('config', '')} | {speed} | {pct} |")
    return "\n".join(lines)


def _page_parts(page: Path) -> tuple[str, str, str]:
    text = page.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise CourseError(f"{page} needs one line `{BEGIN}` and, after it, one line `{END}`: the results table "
                          f"goes between them. Fix: put both lines back above and below the table.")
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    return head, body, tail


def page_table(page: Path | str = RESULTS_PAGE) -> str:
    """What docs/results.md holds between the markers now."""
    return _page_parts(Path(page))[1].strip()


def write_page(ladder: Ladder | None = None, page: Path | str = RESULTS_PAGE) -> bool:
    """Puts results_table(ladder) between the page's markers; True if the page changed."""
    page = Path(page)
    head, body, tail = _page_parts(page)
    table = results_table(ladder)
    if body.strip() == table:
        return False
    page.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")
    return True


# ---- what each step bought -------------------------------------------------------------------------
def steps(ladder: Ladder | None = None) -> list[dict]:
    """Per stage with a timed kernel, in stage order: its fastest verified kernel, and the speed-up
    over the previous such stage's fastest (None for the first)."""
    lad = ladder or load_ladder()
    best: dict[str, dict] = {}
    for r in lad.kernels:
        sid = r["variant"][:2]
        if _timed(r) and (sid not in best or r["tflops"] > best[sid]["tflops"]):
            best[sid] = r
    out, previous = [], None
    for sid in sorted(best):
        r = best[sid]
        out.append({"stage": _stage_title(r["variant"]), "variant": r["variant"], "config": r.get("config", ""),
                    "precision": _precision(r), "tflops": r["tflops"], "pct_cublas": r["pct_cublas"], "row": r,
                    "previous": previous["variant"] if previous else None,
                    "speedup": r["tflops"] / previous["tflops"] if previous else None})
        previous = r
    return out


def steps_table(ladder: Ladder | None = None):
    """Markdown: what each stage's idea bought, its best kernel against the previous stage's."""
    lad = ladder or load_ladder()
    lines = ["| stage | fastest kernel | TFLOP/s | × previous stage | % of cuBLAS |", "|---|---|---:|---:|---:|"]
    for s in steps(lad):
        kernel = f"`{s['variant']}`" + (f" ({PRECISION_NAMES.get(s['precision'], s['precision'])})"
                                        if s["precision"] != "fp32" else "")
        gain = "-" if s["speedup"] is None else f"{s['speedup']:.2f}×"
        lines.append(f"| {s['stage']} | {kernel} | {s['tflops']:.2f} | {gain} | {_pct(s['row'])} |")
    return Markdown("\n".join(lines) + f"\n\n{lad.label()}")


# ---- figures --------------------------------------------------------------------------------------
def _palette(names) -> dict[str, str]:
    """One colour per kernel, the same in both figures: tab20's dark shades, then its light ones."""
    import matplotlib
    tab = matplotlib.colormaps["tab20"].colors
    order = list(tab[0::2]) + list(tab[1::2])
    return {n: matplotlib.colors.to_hex(order[i % len(order)]) for i, n in enumerate(names)}


def plot_ladder(ladder: Ladder | None = None):
    """Horizontal bars, one per kernel in stage order: TFLOP/s, labelled with % of cuBLAS; cuBLAS
    dashed. Returns the figure."""
    import matplotlib.pyplot as plt
    lad = ladder or load_ladder()
    rows = [r for r in lad.kernels if _timed(r)]
    colors = _palette(r["variant"] for r in lad.kernels)
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(rows) + 2.0))
    top = max([r["tflops"] for r in rows] + [c["tflops"] for c in lad.cublas.values()])
    for i, r in enumerate(rows):
        tf32 = _precision(r) != "fp32"
        ax.barh(i, r["tflops"], color=colors[r["variant"]], hatch="//" if tf32 else None, edgecolor="white")
        pct = f"{r['pct_cublas']:.1f}% of cuBLAS" + (f" {PRECISION_NAMES.get(_precision(r), '')}" if tf32 else "")
        ax.annotate(f"{r['tflops']:.2f} TFLOP/s, {pct}", xy=(r["tflops"], i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.85})
    styles = {"fp32": "--", "tf32": ":"}
    for precision, c in lad.cublas.items():
        ax.axvline(c["tflops"], color="#444444", linestyle=styles.get(precision, "-."), linewidth=1.2,
                   label=f"cuBLAS {PRECISION_NAMES.get(precision, precision)}: {c['tflops']:.2f} TFLOP/s")
    ax.set_yticks(range(len(rows)), [r["variant"] for r in rows])
    ax.invert_yaxis()
    low = min(r["tflops"] for r in rows)
    ax.set_xscale("log")   # 0.5 to 300 TFLOP/s: on a linear axis the first stages' bars vanish
    ax.set_xlim(low / 2, top * 12)   # room for the labels
    ax.set_xlabel(f"TFLOP/s at {lad.size}x{lad.size}x{lad.size} (2MNK / median time), log scale")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8.5)   # the first stages' bars are the shortest
    ax.set_title(f"Every stage's kernels on {lad.gpu}, {lad.date}")
    fig.text(0.01, 0.0, _wrap(lad.label()), fontsize=7.5, color="#555555", va="top")
    return fig


def _wrap(text: str, width: int = 150) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, width))


def ladder_ceilings(ladder: Ladder, directory: Path | str = RESULTS_DIR) -> roofline.Ceilings:
    """The ladder GPU's roofs from its newest committed ceilings file (else the datasheet), with
    the ladder's own cuBLAS FP32, timed in the same run as the kernels, as the cuBLAS line."""
    ceilings = roofline.committed_ceilings(ladder.gpu, directory) or roofline.Ceilings.from_spec(ladder.gpu)
    c = ladder.cublas["fp32"]
    return replace(ceilings, cublas_tflops=float(c["tflops"]),
                   cublas_source=f"cuBLAS SGEMM {ladder.size}^3, TF32 off, in the same run (`{ladder.source}`)")


def plot_ladder_roofline(ladder: Ladder | None = None, directory: Path | str = RESULTS_DIR):
    """Every timed kernel of the ladder on the roofline of its GPU: intensity from its stage's model
    (helpers.intensity, at the ladder's size and the row's configuration). Returns the figure."""
    import matplotlib.pyplot as plt
    lad = ladder or load_ladder()
    names = {v.name for v in stages.variants()}
    drawable = [r for r in lad.kernels if _timed(r) and r["variant"] in names and r["variant"] in intensity.MODELS]
    left_out = [r["variant"] for r in lad.kernels if _timed(r) and r not in drawable]
    rows = [{"M": lad.size, "N": lad.size, "K": lad.size, **r} for r in drawable]
    points = roofline.points_from_rows(rows, f"{lad.size}^3, measured on {lad.gpu}, {lad.date} (`{lad.source}`)")
    fig, ax = plt.subplots(figsize=(11, 6))
    roofline_plot.plot_roofline(ladder_ceilings(lad, directory), points, ax=ax, labels=False,
                           colors=_palette(r["variant"] for r in lad.kernels),
                           title=f"Every stage on the roofline of {lad.gpu}, {lad.date}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)   # beside the axes: many kernels
    shared: dict[float, list[str]] = {}
    for p in points:
        shared.setdefault(round(p.intensity_flop_per_byte, 1), []).append(p.label)
    notes = [f"{', '.join(names)} share {x:g} FLOP/B (the same block tile, so the same modelled DRAM traffic)."
             for x, names in sorted(shared.items()) if len(names) > 1]
    if any(_precision(r) != "fp32" for r in drawable):
        if roofline_plot.add_tf32_roof(ax, lad.gpu):
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, labelspacing=0.3)
            notes.append("TF32 kernels run on the tensor cores: their roof is the dash-dotted one, not the FP32 peak.")
        else:
            notes.append("TF32 kernels run on the tensor cores, whose peak is above the FP32 roof drawn here.")
    if left_out:
        notes.append(f"Not drawn (no registered kernel or intensity model): {', '.join(left_out)}.")
    if notes:
        ax.text(1.01, 0.0, "\n".join(_wrap(n, 48) for n in notes), transform=ax.transAxes, ha="left",
                va="bottom", fontsize=8, color="#333333")
    return fig


def smem_ceilings(ladder: Ladder, directory: Path | str = RESULTS_DIR) -> roofline.Ceilings:
    """The shared-memory roofline's roofs: the FP32 peak of ladder_ceilings, and the shared-memory bandwidth,
    BANKS banks x 4 bytes x the SM clock x the SMs, from the GPU's SM count and clock in the ladder's provenance."""
    c = ladder_ceilings(ladder, directory)
    p = ladder.provenance
    sms, ghz = p.get("sm_count"), p.get("sm_clock_ghz")
    if not sms or not ghz:
        raise CourseError(f"{ladder.source} records no sm_count and sm_clock_ghz in its provenance: the shared-memory "
                          f"bandwidth (banks x 4 B x clock x SMs) needs both.")
    tbs = BANKS * FLOAT_BYTES * ghz * 1e9 * sms / 1e12
    return replace(c, dram_tbs=tbs, copy_tbs=None, copy_source=None,
                   detail=f"{c.detail or c.source}; shared memory: {BANKS} banks x {FLOAT_BYTES} B x {ghz:g} GHz x "
                          f"{sms} SMs = {tbs:.1f} TB/s (the ladder's provenance)")


def plot_ladder_smem_roofline(ladder: Ladder | None = None, directory: Path | str = RESULTS_DIR):
    """Every timed FP32 kernel of the ladder that stages tiles in shared memory, on the roofline of shared-memory
    traffic: FLOP per byte loaded from shared memory (its stage's model) against the shared-memory bandwidth.
    Stages 05-09 share their DRAM intensity (the same block tile) and separate here. Returns the figure."""
    import matplotlib.pyplot as plt
    lad = ladder or load_ladder()
    names = {v.name for v in stages.variants()}
    rows = []
    for r in lad.kernels:
        if not (_timed(r) and r["variant"] in names and r["variant"] in intensity.MODELS and _precision(r) == "fp32"):
            continue
        v = stages.variant(r["variant"])
        config = roofline.config_from_row(v, r)
        if config is not None and intensity.intensity(v, lad.size, lad.size, lad.size, config).smem:
            rows.append({"M": lad.size, "N": lad.size, "K": lad.size, **r})
    points = roofline.points_from_rows(rows, f"{lad.size}^3, measured on {lad.gpu}, {lad.date} (`{lad.source}`)",
                                       level="smem")
    fig, ax = plt.subplots(figsize=(11, 6))
    roofline_plot.plot_roofline(smem_ceilings(lad, directory), points, ax=ax, labels=False,
                                colors=_palette(r["variant"] for r in lad.kernels), memory="shared memory",
                                title=f"FP32 stages on the shared-memory roofline of {lad.gpu}, {lad.date}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.text(1.01, 0.0, _wrap("Shared-memory intensity: FLOPs per byte the threads load from shared memory "
                             "(helpers.intensity; a 16-byte load counts 16 bytes). The naive kernels use none; TF32 "
                             "kernels run on the tensor cores, whose roof is another (notebook 10).", 48),
            transform=ax.transAxes, ha="left", va="bottom", fontsize=8, color="#333333")
    return fig


def draw_11_smem_roofline(path: Path, ladder: Ladder | None = None) -> Path:
    """figures/11_autotuning_smem_roofline.svg: plot_ladder_smem_roofline() of the newest committed ladder."""
    with matplotlib.rc_context(SVG_RC):
        return save_svg(plot_ladder_smem_roofline(ladder), path)


def draw_11_ladder(path: Path, ladder: Ladder | None = None) -> Path:
    """figures/11_autotuning_ladder.svg: plot_ladder() of the newest committed ladder."""
    with matplotlib.rc_context(SVG_RC):
        return save_svg(plot_ladder(ladder), path)


def draw_11_roofline(path: Path, ladder: Ladder | None = None) -> Path:
    """figures/11_autotuning_roofline.svg: plot_ladder_roofline() of the newest committed ladder."""
    with matplotlib.rc_context(SVG_RC):
        return save_svg(plot_ladder_roofline(ladder), path)


def regenerate(ladder: Ladder | None = None, page: Path | str = RESULTS_PAGE,
               figures_dir: Path | str | None = None) -> list[Path]:
    """After a new ladder is committed: the results table of docs/results.md and the figures drawn from the
    ladder (default: newest_ladder()). Returns the files written."""
    lad = ladder or load_ladder()
    written = [Path(page)] if write_page(lad, page) else []
    out = Path(figures_dir or FIGURES_DIR)
    return written + [draw(out / f"{name}.svg", lad) for name, draw in
                      (("11_autotuning_ladder", draw_11_ladder), ("11_autotuning_roofline", draw_11_roofline))]
