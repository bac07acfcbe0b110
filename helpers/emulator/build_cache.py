"""The emulator's build cache on disk: entries written whole or not at all, checked when used,
built again once when damaged; a cache folder that cannot be written gives way to a temporary one.

An entry is a folder <cache>/emulator/<key>/ holding one product (a kernel's program, or the
runtime object) and ENTRY_RECORD, written last, with the product's size and SHA-256. It is built in
a temporary folder beside it (.tmp-*) and renamed into place, so a build killed half-way, a full
disk or a crash leaves a .tmp-* folder (swept after an hour), never a half-written entry. Each time
an entry is used its product is checked against its record (hashed once per process, afterwards
by its file's identity: size, modification and change times, inode, so that a file rewritten in place
with the same size and date is hashed again); an entry that does not match, has no record, or whose
program fails to load or to run (the launcher hashes it again when a program fails unexpectedly) is
moved aside and built again, once, with one line on stderr saying so.

The cache is TBT_CACHE_DIR, else $XDG_CACHE_HOME/tile-by-tile, else ~/.cache/tile-by-tile. When it
cannot be written (read-only, full, no permission) builds go to a folder under the system's
temporary folder for the session, with one warning naming TBT_CACHE_DIR; when neither can be
written, CacheError says so and what to do.

NVRTC's verdicts and ptxas's counts (helpers.run.toolchain) are kept in <cache>/results/ (remembered(): one
small JSON file each, keyed by the full source, its headers, the options and the toolchain); traces
(helpers.measure.accesses) are cached in memory only; on a GPU, CuPy keeps its own compile cache
(~/.cupy/kernel_cache), whose entries carry a SHA-1 of their content that CuPy checks when it loads them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

from helpers.core.errors import CacheError

ENTRY_RECORD = "entry.json"
FORMAT = 1                       # part of every key: entries of an older layout are never read
STALE_S = 3600.0                 # .tmp-* and .damaged-* folders older than this are swept
MISSING = "missing"
# errno values that say the folder cannot hold the cache (rather than that a build went wrong)
UNUSABLE = {errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR, errno.EEXIST}
_DISK_MESSAGES = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
                  "Read-only file system": errno.EROFS,
                  # g++ -E whose output did not fit (it names another errno, after removing the file)
                  "when writing output to": errno.ENOSPC}
FIX = ("Fix: set TBT_CACHE_DIR to a folder you can write on a disk with room (a kernel's build takes a few "
       "MB), e.g. `export TBT_CACHE_DIR=$HOME/tbt-cache`, or free some space.")

_probed: dict[str, str | None] = {}          # folder -> why it cannot be written (None: it can)
_fallback: dict[str, Path] = {}              # configured root -> the temporary root used instead
_checked: dict[Path, tuple[int, ...]] = {}   # product -> its _identity() when last found whole


def configured_root() -> Path:
    root = os.environ.get("TBT_CACHE_DIR")
    if root:
        return Path(root).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tile-by-tile"


def temporary_root() -> Path:
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"tile-by-tile-{user}"


def notice(message: str) -> None:
    """One line on stderr (a notebook shows it under the cell)."""
    print(f"tile-by-tile: {message}", file=sys.stderr, flush=True)


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _probe(folder: Path) -> str | None:
    """None when `folder` can be created and written to, else why not."""
    key = str(folder)
    if key not in _probed:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=folder, prefix=".probe-")
            try:
                os.write(fd, b"\0" * 4096)
            finally:
                os.close(fd)
                os.unlink(name)
            _probed[key] = None
        except OSError as e:
            _probed[key] = _why(e)
    return _probed[key]


def _own(folder: Path) -> Path:
    """`folder`, created private; a fresh private folder instead where someone else owns it or may
    write to it (the system's temporary folder is shared: the programs in it are run)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
            return Path(tempfile.mkdtemp(prefix="tile-by-tile-"))
    except OSError:
        pass                        # _probe says why
    return folder


def _fall_back(configured: Path, why: str) -> Path:
    """The temporary root, after one warning; CacheError when it cannot be written either."""
    temporary = _own(temporary_root())
    if temporary == configured:
        raise CacheError(f"the build cache {configured / 'emulator'} cannot be written ({why}). {FIX}")
    problem = _probe(temporary / "emulator")
    if problem:
        raise CacheError(f"the emulator has nowhere to write its builds: the cache {configured / 'emulator'} "
                         f"cannot be written ({why}), nor the temporary folder {temporary / 'emulator'} "
                         f"({problem}). {FIX}")
    notice(f"warning: the build cache {configured / 'emulator'} cannot be written ({why}); this session builds "
           f"in {temporary / 'emulator'}, which is not kept. Fix: set TBT_CACHE_DIR to a folder you can write.")
    _fallback[str(configured)] = temporary
    return temporary


def cache_root() -> Path:
    """The folder that holds emulator/ (and autotune/): the configured one when it can be written."""
    configured = configured_root()
    if str(configured) in _fallback:
        return _fallback[str(configured)]
    why = _probe(configured / "emulator")
    return _fall_back(configured, why) if why else configured


def cache_dir() -> Path:
    """Where the emulator's builds go."""
    return cache_root() / "emulator"


def forget() -> None:
    """Forget what this process knows of the disk (for tests that swap TBT_CACHE_DIR)."""
    _probed.clear()
    _fallback.clear()
    _checked.clear()


# ---- one entry -------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _identity(stat: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is written: its size and times (ctime too, which no one can set back) and inode."""
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev


def problem(folder: Path, product: str, recheck: bool = False) -> str | None:
    """None when `folder` holds a whole build of `product`; MISSING when there is no entry; else
    what is wrong with it. recheck: hash it again even if this process found it whole before."""
    path = folder / product
    if not recheck:   # a stat, no file opened, where this process already found the very same file whole
        try:
            if _checked.get(path) == _identity(path.stat()):
                return None
        except OSError:
            pass
    if not folder.exists():
        return MISSING
    try:
        record = json.loads((folder / ENTRY_RECORD).read_text())
        size, digest = int(record["size"]), str(record["sha256"])
    except FileNotFoundError:
        return f"no {ENTRY_RECORD}: its build never finished"
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {ENTRY_RECORD} is unreadable"
    try:
        stat = path.stat()
    except OSError:
        return f"{product} is missing"
    if not recheck and _checked.get(path) == _identity(stat):
        return None
    _checked.pop(path, None)
    if stat.st_size != size:
        return f"{product} is {stat.st_size:,} bytes; its build wrote {size:,} bytes"
    if _sha256(path) != digest:
        return f"{product} is not what its build wrote (SHA-256 differs)"
    _checked[path] = _identity(stat)
    return None


def _seal(folder: Path, product: str) -> None:
    path = folder / product
    record = {"format": FORMAT, "product": product, "size": path.stat().st_size, "sha256": _sha256(path)}
    (folder / ENTRY_RECORD).write_text(json.dumps(record) + "\n")


def discard(folder: Path) -> None:
    """Moves an entry aside (one rename, so no reader sees it half-deleted), then deletes it."""
    aside = folder.parent / f".damaged-{uuid.uuid4().hex[:8]}"
    try:
        os.replace(folder, aside)
    except FileNotFoundError:
        return                      # another process moved it first
    shutil.rmtree(aside, ignore_errors=True)
    _checked.pop(folder, None)


def _sweep(root: Path) -> None:
    """Deletes what killed builds left: .tmp-* and .damaged-* folders older than STALE_S."""
    now = time.time()
    for p in [*root.glob(".tmp-*"), *root.glob(".damaged-*")]:
        try:
            if now - p.stat().st_mtime > STALE_S:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def _build(root: Path, final: Path, product: str, make: Callable[[Path], None]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    _sweep(root)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
    try:
        make(tmp)
        _seal(tmp, product)
        try:
            os.replace(tmp, final)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            shutil.rmtree(tmp, ignore_errors=True)     # another process published it first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def raise_if_disk_error(output: str, folder: Path) -> None:
    """A compiler that failed because the disk is full or read-only: an OSError, so that the
    cache falls back instead of reporting a compile error."""
    for text, code in _DISK_MESSAGES.items():
        if text in output:
            raise OSError(code, os.strerror(code), str(folder))


def _in(path, root: Path) -> bool:
    """Whether `path` (an OSError's filename) is the cache folder, inside it or one of its parents."""
    try:
        p, r = Path(os.fsdecode(path)).resolve(), root.resolve()
    except (OSError, ValueError, TypeError):
        return False
    return p.is_relative_to(r) or r.is_relative_to(p)


def entry(key: str, product: str, make: Callable[[Path], None], what: str,
          load: Callable[[Path], object] | None = None) -> tuple[Path, object]:
    """(path of `product` in the cache entry `key`, load(path) or None). make(folder) writes the
    product into the fresh folder it is given; it runs when the entry is missing, and once more
    when the entry is damaged or its product fails to load. `what` names the entry in messages."""
    configured = configured_root() / "emulator"
    healed = False
    while True:
        root = cache_dir()
        final = root / key
        found = problem(final, product)
        if found is not None and root != configured and problem(configured / key, product) is None:
            final, found = configured / key, None   # a whole entry in a cache this session cannot write to
        if found is None:
            try:
                return final / product, (load(final / product) if load else None)
            except Exception as e:
                if healed:
                    raise
                found = f"it fails to load: {e}"
                if final.parent != root:    # in a cache this session cannot write to: build here instead
                    final, found = root / key, MISSING
        if found != MISSING:
            if healed:
                raise CacheError(f"the cached build {final} ({what}) is still damaged after it was built again "
                                 f"({found}). Delete {root} and try again; if it recurs, the disk may be failing. {FIX}")
            notice(f"the cached build {final} ({what}) is damaged ({found}); building it again.")
            healed = True
        try:
            if found != MISSING:
                discard(final)
            _build(root, final, product, make)
        except OSError as e:
            if e.errno not in UNUSABLE or not _in(e.filename, root):
                raise
            if root != configured:      # already the temporary folder
                raise CacheError(f"building {what} in {root} failed: {_why(e)}. {FIX}") from None
            if str(configured_root()) not in _fallback:   # (a nested build, of the runtime, may have)
                _fall_back(configured_root(), _why(e))
            continue
        found = problem(final, product)
        if found is None:
            return final / product, (load(final / product) if load else None)
        raise CacheError(f"the build of {what} in {final} was damaged as it was written ({found}). {FIX}")


# ---- small results (NVRTC's verdicts, ptxas's counts) ----------------------------------------------
RESULTS = "results"              # <cache>/results/<kind>/<key>.json, beside emulator/


def remembered(kind: str, key_parts, compute: Callable[[], object]) -> object:
    """compute(), a JSON value, kept on disk under a key of everything it depends on (`key_parts`, JSON): a
    later process asks the disk instead of computing again. Each file is written whole (a temporary file
    renamed into place) and names its key; one that does not parse or names another key is computed again and
    replaced. Where no cache folder can be written, compute() runs every time (nothing is lost but time)."""
    text = json.dumps([FORMAT, kind, key_parts], sort_keys=True)
    key = hashlib.sha256(text.encode()).hexdigest()
    try:
        folder = cache_root() / RESULTS / kind
    except CacheError:
        return compute()
    path = folder / f"{key}.json"
    try:
        stored = json.loads(path.read_text())
        if stored.get("key") == text:
            return stored["value"]
    except (OSError, ValueError, AttributeError, KeyError):
        pass                        # missing, half-read or damaged: computed again below
    value = compute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"key": text, "value": value}, f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass                        # a full or read-only disk costs the next process a compile, nothing more
    return value
