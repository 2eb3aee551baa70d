# The compiled core's event heap (included by _core.pyx before _state.pxi): a part that
# owns and frees its memory, held by the core as the typed attribute `events`.

@cython.final
cdef class EventHeap:
    """Pending events in (time, kind, sequence) order: a binary min-heap of ``Entry``.

    Each entry carries its job's version when it was pushed; the core skips an entry
    whose job has moved on since (``_Events._drop_stale``).
    """

    cdef Entry* heap  # (cap) entries, the first n a heap
    cdef int n  # entries held
    cdef int cap  # entries allocated (doubled when full)
    cdef long seq  # entries ever pushed: the tie-break after time and kind

    def __cinit__(self, int capacity=64):
        self.cap = max(capacity, 1)
        self.n = 0
        self.seq = 0
        self.heap = <Entry*>checked_malloc(self.cap * sizeof(Entry))

    def __dealloc__(self):
        free(self.heap)

    cdef EventHeap copy(self):
        """An independent heap with the same entries and sequence (``Core.fork``)."""
        cdef EventHeap other = EventHeap.__new__(EventHeap, 1)
        free(other.heap)
        other.heap = <Entry*>duplicate(self.heap, self.cap * sizeof(Entry))
        other.n = self.n
        other.cap = self.cap
        other.seq = self.seq
        return other

    cdef inline void push(self, double time, int kind, int job, long version) except *:
        cdef Entry e
        cdef Entry* grown
        cdef int i, parent
        if self.n == self.cap:
            grown = <Entry*>realloc(self.heap, 2 * self.cap * sizeof(Entry))
            if grown == NULL:
                raise MemoryError()
            self.heap = grown
            self.cap *= 2
        self.seq += 1
        e.time = time
        e.kind = kind
        e.seq = self.seq
        e.job = job
        e.version = version
        i = self.n
        self.n += 1
        while i > 0:
            parent = (i - 1) >> 1
            if entry_less(&e, &self.heap[parent]):
                self.heap[i] = self.heap[parent]
                i = parent
            else:
                break
        self.heap[i] = e

    cdef inline void pop(self) noexcept:
        cdef int n = self.n - 1
        cdef int i = 0, child
        cdef Entry last = self.heap[n]
        self.n = n
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
