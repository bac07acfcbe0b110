"""Reading a kernel's .cu file: its text, its kernels' parameter names, a line for a message."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.core.errors import KernelArgumentError
from helpers.core.paths import KERNELS

COURSE_HEADERS = KERNELS  # wgmma.cuh
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


@functools.lru_cache(maxsize=128)
def strip_comments(text: str) -> str:
    """Comments replaced by spaces, newlines kept, so offsets and line numbers still match. Kept for the
    last texts asked about: a build, a launch and a trace each ask about the same file several times."""
    return _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


@dataclass(frozen=True)
class KernelSource:
    path: Path
    text: str

    @classmethod
    def read(cls, path) -> "KernelSource":
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"No kernel file {path}: give the path of a .cu file "
                                    f"(the course's are in kernels/).")
        return cls(path.resolve(), path.read_text())

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

    def local_headers(self) -> dict[str, str]:
        """The headers this file includes with quotes (`#include "wgmma.cuh"`) that lie beside it
        or in kernels/, by name: their text is part of what the kernel is."""
        found = {}
        for name in _LOCAL_INCLUDE.findall(strip_comments(self.text)):
            path = next((d / name for d in self.include_dirs if (d / name).is_file()), None)
            if path is not None:
                found[name] = path.read_text()
        return found

    def required_arch(self) -> str | None:
        """"sm_90a" when the kernel or a header it includes uses instructions that only
        architecture-specific targets have (Hopper's wgmma), else None (any sm_XY)."""
        texts = [self.text, *self.local_headers().values()]
        return "sm_90a" if any(_ARCH_SPECIFIC_PTX.search(strip_comments(t)) for t in texts) else None

    def kernel_names(self) -> list[str]:
        return [m.group(1) for m in _KERNEL.finditer(strip_comments(self.text))]

    def parameter_names(self, name_expression: str) -> list[str]:
        """Names of a kernel's parameters, for messages; [] when the signature is unusual."""
        base = template_base(name_expression)
        for m in _KERNEL.finditer(strip_comments(self.text)):
            if m.group(1) == base:
                params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                return [re.findall(r"\w+", p)[-1] for p in params]
        return []

    def require_kernel(self, name_expression: str) -> None:
        base = template_base(name_expression)
        names = self.kernel_names()
        if base not in names:
            found = ", ".join(names) or "none"
            raise KernelArgumentError(
                f"{self.display_path} has no __global__ kernel named {base!r} (found: {found}). "
                f"Fix: pass --kernel with one of those names.")


_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
# PTX that exists only for sm_90a: the warpgroup MMA instructions (kernels/wgmma.cuh).
_ARCH_SPECIFIC_PTX = re.compile(r"\bwgmma\.(?:mma_async|fence|commit_group|wait_group)\b")

_KERNEL = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)")


def template_base(name_expression: str) -> str:
    return name_expression.split("<", 1)[0].strip()
