"""`grade --jobs N`: notebooks graded N at a time, each grade handed back as soon as it is known.

Threads, not processes: a notebook's run and its kernel cells' checks are subprocesses (the sandbox), and what the
grader does itself (reading answers, the checkers, one at a time under a lock) is short. In container mode each
job has its own uid (container.SANDBOX_UID - job), so that killing what one notebook left behind spares the others.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterator

from helpers.teach import sandbox as sandboxing
from helpers.teach.grading.results import Grade


def grade_all(paths: list[Path], grade_one: Callable[[Path, int], Grade], jobs: int = 1) -> Iterator[Grade]:
    """Grades each path with grade_one(path, job), job in range(jobs), at most `jobs` at a time; yields each grade
    as it comes (in the order they finish). On Ctrl-C every run under way is killed before the interrupt goes on."""
    if jobs <= 1:
        for path in paths:
            yield grade_one(path, 0)
        return
    free: queue.Queue[int] = queue.Queue()
    for job in range(jobs):
        free.put(job)

    def one(path: Path) -> Grade:
        job = free.get()
        try:
            return grade_one(path, job)
        finally:
            free.put(job)
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade")
    try:
        for future in as_completed([pool.submit(one, p) for p in paths]):
            yield future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        sandboxing.stop_all()
        raise
    pool.shutdown()
