# The compiled core, part 2 of 6 (included by _core.pyx): the event heap.

cdef class _Events(_State):
    """The event heap: (time, kind, sequence) order, stale entries skipped by version."""

    cdef inline void _push(self, double time, int kind, int rank) except *:
        cdef Entry e
        cdef int i, parent
        if self.heap_n == self.heap_cap:
            self.heap_cap *= 2
            self.heap = <Entry*>realloc(self.heap, self.heap_cap * sizeof(Entry))
            if self.heap == NULL:
                raise MemoryError()
        self.seq += 1
        e.time = time
        e.kind = kind
        e.seq = self.seq
        e.job = rank
        e.version = self.jobs[rank].version
        i = self.heap_n
        self.heap_n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if entry_less(&e, &self.heap[parent]):
                self.heap[i] = self.heap[parent]
                i = parent
            else:
                break
        self.heap[i] = e

    cdef inline void _pop(self) noexcept:
        cdef int n = self.heap_n - 1
        cdef int i = 0, child
        cdef Entry last = self.heap[n]
        self.heap_n = n
        if n == 0:
            return
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and entry_less(&self.heap[child + 1], &self.heap[child]):
                child += 1
            if entry_less(&self.heap[child], &last):
                self.heap[i] = self.heap[child]
                i = child
            else:
                break
        self.heap[i] = last

    cdef inline void _drop_stale(self) noexcept:
        while self.heap_n and self.heap[0].version != self.jobs[self.heap[0].job].version:
            self._pop()
