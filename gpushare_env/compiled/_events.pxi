# The compiled core, part 2 of 7 (included by _core.pyx): events for jobs, on the core's
# `EventHeap` (_event_heap.pxi, which owns the entries).

cdef class _Events(_State):
    """Events for jobs: each stamped with its job's version, stale ones skipped."""

    cdef inline void _push(self, double time, int kind, int rank) except *:
        self.events.push(time, kind, rank, self.jobs.row[rank].version)

    cdef inline void _pop(self) noexcept:
        self.events.pop()

    cdef inline void _drop_stale(self) noexcept:
        cdef EventHeap events = self.events
        while events.n and events.heap[0].version != self.jobs.row[events.heap[0].job].version:
            events.pop()
