"""Reading a kernel's .cu file: its text, its kernels' parameter names, a line for a message.

A file is read once per process and again only when it changes (helpers/core/file_stamps.py): a repeated
launch stats the file and the headers it includes, and opens none of them. What is parsed from a text
(comments stripped, kernel names, parameters, the headers it includes) is kept with it.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from helpers.core import file_stamps
from helpers.core.errors import InputError, KernelArgumentError
from helpers.core.paths import KERNELS

COURSE_HEADERS = KERNELS  # wgmma.cuh
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def strip_comments(text: str) -> str:
    """Comments replaced by spaces, newlines kept, so offsets and line numbers still match (a source's text
    stripped once: KernelSource.stripped)."""
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def same_kernel(a: str, b: str) -> bool:
    """The same kernel source, but for blank lines at either end and spaces at the ends of lines."""
    return [ln.rstrip() for ln in a.strip().splitlines()] == [ln.rstrip() for ln in b.strip().splitlines()]


@dataclass(frozen=True)
class KernelSource:
    path: Path
    text: str

    @classmethod
    def read(cls, path) -> "KernelSource":
        """The file's source, read at the first call and again only once the file changed (its stamp)."""
        key = file_stamps.absolute(path)
        now = file_stamps.stamp(key)
        hit = _read.get(key)
        if hit is not None and now is not None and hit[0] == now:
            return hit[1]
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No kernel file {path}: give the path of a .cu file "
                                    f"(the course's are in kernels/).")
        try:
            source = cls(path.resolve(), path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise InputError(f"{path} is not UTF-8 text (byte {e.start}: {e.reason}), so it is no CUDA source a "
                             f"compiler reads. Fix: save it as UTF-8 (a .cu file of CUDA C++).") from None
        with _read_lock:
            _read[key] = (now, source)
        return source

    @functools.cached_property
    def stripped(self) -> str:
        """The text with comments replaced by spaces (strip_comments), computed once."""
        return strip_comments(self.text)

    @property
    def display_path(self) -> str:
        """The path relative to the working directory when inside it, for messages."""
        try:
            return str(self.path.relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""

    @property
    def include_dirs(self) -> tuple[Path, ...]:
        """Where a quoted #include is looked for: beside the file, then the course's kernels/."""
        return tuple(dict.fromkeys((self.path.parent, COURSE_HEADERS)))

    @functools.cached_property
    def header_paths(self) -> dict[str, Path]:
        """The headers this file includes with quotes (`#include "wgmma.cuh"`) that lie beside it or in
        kernels/, by name, and where."""
        found = {}
        for name in _LOCAL_INCLUDE.findall(self.stripped):
            path = next((d / name for d in self.include_dirs if (d / name).is_file()), None)
            if path is not None:
                found[name] = path
        return found

    def local_headers(self) -> dict[str, str]:
        """The headers this file includes with quotes that lie beside it or in kernels/, by name, and their
        text (part of what the kernel is): read again only when a header changed."""
        found = {}
        for name, path in self.header_paths.items():
            try:
                found[name] = file_stamps.read_text_cached(path)
            except OSError:   # deleted since: NVRTC says what is missing
                pass
        return found

    def required_arch(self) -> str | None:
        """"sm_90a" when the kernel or a header it includes uses instructions that only
        architecture-specific targets have (Hopper's wgmma), else None (any sm_XY)."""
        return _required_arch(self.stripped, tuple(self.local_headers().values()))

    @functools.cached_property
    def _kernels(self) -> dict[str, str]:
        """Each __global__ function's name and parameter list, in the file's order."""
        found: dict[str, str] = {}
        for m in _KERNEL.finditer(self.stripped):
            found.setdefault(m.group(1), m.group(2))
        return found

    def kernel_names(self) -> list[str]:
        return list(self._kernels)

    def parameter_names(self, name_expression: str) -> list[str]:
        """Names of a kernel's parameters, for messages; [] when the signature is unusual."""
        params = self._kernels.get(template_base(name_expression))
        if params is None:
            return []
        return [re.findall(r"\w+", p)[-1] for p in (p.strip() for p in params.split(",")) if p]

    def require_kernel(self, name_expression: str) -> None:
        base = template_base(name_expression)
        if base in self._kernels:
            return
        names = self.kernel_names()
        if base not in names:
            found = ", ".join(names) or "none"
            raise KernelArgumentError(
                f"{self.display_path} has no __global__ kernel named {base!r} (found: {found}). "
                f"Fix: pass --kernel with one of those names.")


_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
# PTX that exists only for sm_90a: the warpgroup MMA instructions (kernels/wgmma.cuh).
_ARCH_SPECIFIC_PTX = re.compile(r"\bwgmma\.(?:mma_async|fence|commit_group|wait_group)\b")

_KERNEL = re.compile(  # the attributes a kernel may carry: __launch_bounds__(...), __cluster_dims__(...)
    r"__global__\s+(?:(?:__launch_bounds__|__cluster_dims__)\s*\([^)]*\)\s*)*void\s+"
    r"(?:(?:__launch_bounds__|__cluster_dims__)\s*\([^)]*\)\s*)*(\w+)\s*\(([^)]*)\)")


def template_base(name_expression: str) -> str:
    return name_expression.split("<", 1)[0].strip()


@functools.lru_cache(maxsize=256)
def _required_arch(stripped: str, headers: tuple[str, ...]) -> str | None:
    texts = (stripped, *(strip_comments(h) for h in headers))
    return "sm_90a" if any(_ARCH_SPECIFIC_PTX.search(t) for t in texts) else None


# KernelSource.read's sources by absolute path, each with the stamp its file had when it was read
_read: dict[str, tuple[tuple, KernelSource]] = {}
_read_lock = threading.Lock()


def forget() -> None:
    """Drops every source and header read so far (the next read opens the files again)."""
    with _read_lock:
        _read.clear()
    file_stamps.forget()
