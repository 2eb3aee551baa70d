"""Keep freed memory in the process, so that torch's large temporary tensors do not page-fault.

A PPO update on ``GPUShare-v0`` allocates and frees tensors of a few MB many times per
minibatch (activations, their gradients, the zero-filled gradients of slices). glibc's
``malloc`` serves blocks that large with ``mmap`` and returns them to the kernel with
``munmap`` (or trims the heap), so each new tensor's pages are faulted in afresh: in a
profile of the default update, ``fill_`` of freshly mapped gradient buffers took a
quarter of the time. Raising glibc's mmap and trim thresholds keeps those blocks on the
heap for reuse; the process's peak memory is about the same (the blocks are reused, not
added), it only keeps its high-water mark.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["keep_freed_memory"]

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: Largest block glibc accepts as the mmap threshold on 64-bit (HEAP_MAX_SIZE / 2).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: Free memory at the top of the heap kept before it is returned to the kernel.
TRIM_THRESHOLD = 512 * 1024 * 1024

_done = False


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process (once); ``False`` where
    the C library is not glibc (macOS, Windows, musl), which then keeps its own policy."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    _done = ok
    return ok
