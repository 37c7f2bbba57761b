"""What the local engine asks of its host process: freed memory back to the OS, and no stray OpenMP teams.

>>> on_a_passing_thread(sum, [1, 2, 3])
6
>>> isinstance(release_freed_memory(), bool)
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def _load_malloc_trim() -> Callable[[int], int] | None:
    libc = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(libc), "malloc_trim", None) if libc else None


_MALLOC_TRIM = _load_malloc_trim()  # glibc only; None elsewhere (macOS, musl)


def release_freed_memory() -> bool:
    """Return the C heap's freed pages to the OS (glibc's ``malloc_trim``); False where unavailable.

    Decoding allocates KV caches of ever-changing sizes; glibc keeps the freed memory in its
    heap, so a process's resident size only grew (about 5.5 GB per 128-rollout evaluation,
    BENCHMARKS.md section 6) although Python and torch had released it.
    """
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True


def on_a_passing_thread(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` run on a thread that then exits, so the caller's thread keeps no OpenMP team.

    Tensor work (loading a model, copying weights) gives a thread a team of its own. With two
    teams on 2 cores the OpenMP runtime stops spin-waiting, and the worker's int4 decode step
    measured 25.7 ms instead of 14.6 (1,200 cached tokens), and 24-27 ms instead of 12-16 when
    only the fused step's weight copies ran on the caller's thread.
    """
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(function, *args, **kwargs).result()
