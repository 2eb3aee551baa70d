# The compiled core, part 3 of 6 (included by _core.pyx): placement strategies and
# the index of GPUs with room.

cdef class _Placement(_Events):
    """Where a job's workers go under each strategy (``find_placement``)."""

    cdef int _find_placement(self, int rank, int strategy, int* out) except -2:
        """GPUs (sorted, into ``out``) the strategy gives the job now; their count or -1."""
        cdef Job* job = &self.jobs.row[rank]
        cdef int n = job.num_gpus
        cdef int g, best_g
        cdef double score, best
        if strategy == S_EXCLUSIVE:
            return self._exclusive(n, job, out)
        if n > 1:
            return self._shared_gang(strategy, n, job, out)
        if self.gpus.indexed:
            best_g = self._indexed_single(strategy, job)
            if best_g < 0:
                return -1
            out[0] = best_g
            return 1
        best = INFINITY
        best_g = -1
        for g in range(self.gpus.num_gpus):
            score = self._score(strategy, g, job)
            if score < best:
                best = score
                best_g = g
        if best_g < 0:
            return -1
        out[0] = best_g
        return 1

    cdef inline bint _fits(self, int g, Job* job) noexcept:
        """The fit rule, the one every placement, mask and check asks: may a worker of
        ``job`` go on GPU ``g`` now? Its memory (under the shares model, its share of the
        GPU) free and a worker slot; under the shares model also a GPU model the job
        allows and the job's CPU and host memory free on the GPU's node."""
        return self._fits_with(self.gpus.free_mem[g], self.gpus.holders[g], g, job)

    cdef inline bint _fits_with(self, double free, long held, int g, Job* job) noexcept:
        """``_fits`` given GPU ``g``'s free memory (share) and workers, already read."""
        if not (free + EPS >= job.memory and held < self.gpus.max_jobs):
            return False
        return not self.gpus.shares or self._fits_node(g, job)

    cdef bint _fits_node(self, int g, Job* job) noexcept:
        """``_fits``'s shares-model part (out of line: ``_fits`` stays small enough for
        the C compiler to inline into every placement loop)."""
        cdef int node = self.gpus.gpu_node[g]
        return (
            (job.model_mask >> self.gpus.gpu_model[g]) & 1
            and self.gpus.node_cpu_free[node] + EPS >= job.cpu
            and self.gpus.node_mem_free[node] + EPS >= job.host_mem
        )

    cdef inline bint _fits_idle(self, int g, Job* job) noexcept:
        """``_fits`` on a GPU no worker holds (an exclusive placement's rule)."""
        return self.gpus.holders[g] == 0 and self._fits(g, job)

    cdef inline void _holders_changed(self, int g, long before) noexcept:
        """Keep the placement index after GPU ``g``'s worker count changed from ``before``."""
        cdef long after = self.gpus.holders[g]
        cdef int node = self.gpus.gpu_node[g], last
        cdef bint was_open = 0 < before < self.gpus.max_jobs, is_open = 0 < after < self.gpus.max_jobs
        if before == 0 and after > 0:
            self.gpus.idle_on_node[node] -= 1
            self.gpus.idle_total -= 1
        elif before > 0 and after == 0:
            self.gpus.idle_on_node[node] += 1
            self.gpus.idle_total += 1
        if is_open and not was_open:
            self.gpus.open_pos[g] = self.gpus.open_n
            self.gpus.open_list[self.gpus.open_n] = g
            self.gpus.open_n += 1
        elif was_open and not is_open:
            last = self.gpus.open_list[self.gpus.open_n - 1]
            self.gpus.open_list[self.gpus.open_pos[g]] = last
            self.gpus.open_pos[last] = self.gpus.open_pos[g]
            self.gpus.open_pos[g] = -1
            self.gpus.open_n -= 1

    cdef int _first_idle(self, int min_count) noexcept:
        """The lowest idle GPU of the first node with the fewest idle GPUs (at least
        ``min_count``; 0: any node with one), or -1 (needs ``indexed``)."""
        cdef int node, col, g, best_node = -1, best_count = self.gpus.num_gpus + 1
        cdef int count
        for node in range(self.gpus.num_nodes):
            count = self.gpus.idle_on_node[node]
            if count > 0 and count >= min_count and (min_count == 0 or count < best_count):
                best_node = node
                best_count = count
                if min_count == 0:
                    break
        if best_node < 0:
            return -1
        for col in range(self.gpus.node_width):
            g = self.gpus.node_gpus[best_node * self.gpus.node_width + col]
            if g >= 0 and self.gpus.holders[g] == 0:
                return g
        return -1  # unreachable: the node has an idle GPU

    cdef int _indexed_single(self, int strategy, Job* job) noexcept:
        """``find_placement`` of one worker from the index: every idle GPU scores alike
        (equal memories), so the lowest one stands for all; then the open GPUs.  Ties go
        to the lower GPU, as ``np.argmin``'s first minimum."""
        cdef int i, g, best_g = -1
        cdef double score, best = INFINITY
        if self.gpus.idle_total and self.gpus.capacity[0] + EPS >= job.memory:
            best_g = self._first_idle(0)
            best = self._score(strategy, best_g, job)
        for i in range(self.gpus.open_n):
            g = self.gpus.open_list[i]
            score = self._score(strategy, g, job)
            if score < best or (score == best and score != INFINITY and g < best_g):
                best = score
                best_g = g
        return best_g if best != INFINITY else -1

    cdef inline double _score(self, int strategy, int g, Job* job) noexcept:
        """``find_placement``'s score of GPU ``g`` (+inf where the worker does not fit)."""
        cdef double free_gib = self.gpus.free_mem[g], before, after, left
        cdef double memory = job.memory
        cdef long held = self.gpus.holders[g]
        cdef int max_jobs = self.gpus.max_jobs
        if not self._fits_with(free_gib, held, g, job):
            return INFINITY
        if strategy == S_PACK:
            return (free_gib - memory) + (IDLE_PENALTY if held == 0 else 0.0)
        if strategy == S_SPREAD:
            return self.gpus.load[g] + 0.01 * held
        before = free_gib if held >= max_jobs else free_gib * (
            1.0 - <double>upper_bound(self.meter.reference, self.meter.num_reference, free_gib + EPS)
            / <double>self.meter.num_reference
        )
        left = free_gib - memory
        after = left if held + 1 >= max_jobs else left * (
            1.0 - <double>upper_bound(self.meter.reference, self.meter.num_reference, left + EPS)
            / <double>self.meter.num_reference
        )
        return (after - before) + 1e-3 * (free_gib - memory)

    cdef int _shared_gang(self, int strategy, int n, Job* job, int* out) noexcept:
        """``_select`` of ``find_placement`` for a gang of ``n`` workers on shared GPUs:
        the node whose ``n`` lowest scores sum least, else (not under the shares model,
        where a job's GPUs are on one node) the fewest nodes."""
        cdef int width = self.gpus.node_width, node, col, g, total = 0, taken, count, best_node = -1
        cdef double best_total = INFINITY, node_total
        cdef double* score = self.gpus.scratch_score
        cdef double* row = self.gpus.scratch_row
        cdef int* cols = self.gpus.scratch_cols
        cdef int* per_node = self.gpus.scratch_nodes
        for g in range(self.gpus.num_gpus):
            score[g] = self._score(strategy, g, job)
        memset(per_node, 0, self.gpus.num_nodes * sizeof(int))
        for node in range(self.gpus.num_nodes):
            for col in range(width):
                g = self.gpus.node_gpus[node * width + col]
                if g >= 0 and score[g] != INFINITY:
                    per_node[node] += 1
            total += per_node[node]
        if n <= width:
            for node in range(self.gpus.num_nodes):
                self._node_order(node, score, row, cols)
                node_total = pairwise_sum(row, n)
                if node_total < best_total:  # np.argmin: the first smallest, finite only
                    best_total = node_total
                    best_node = node
            if best_node >= 0:
                self._node_order(best_node, score, row, cols)
                for col in range(n):
                    out[col] = self.gpus.node_gpus[best_node * width + cols[col]]
                self._sort(out, n)
                return n
        if total < n or self.gpus.shares:
            return -1
        # across nodes: the nodes with the most fitting GPUs first (ties: lower node)
        taken = 0
        for count in range(width, 0, -1):
            for node in range(self.gpus.num_nodes):
                if per_node[node] != count:
                    continue
                self._node_order(node, score, row, cols)
                for col in range(min(count, n - taken)):
                    out[taken] = self.gpus.node_gpus[node * width + cols[col]]
                    taken += 1
                if taken == n:
                    self._sort(out, n)
                    return n
        return -1  # unreachable when total >= n

    cdef void _node_order(self, int node, double* score, double* row, int* cols) noexcept:
        """A node's GPU scores (+inf for padding) sorted, stable: ``row`` and ``cols``."""
        cdef int width = self.gpus.node_width, col, j, g
        cdef double value
        for col in range(width):
            g = self.gpus.node_gpus[node * width + col]
            value = score[g] if g >= 0 else INFINITY
            j = col - 1
            while j >= 0 and row[j] > value:  # insertion sort: equal values keep their order
                row[j + 1] = row[j]
                cols[j + 1] = cols[j]
                j -= 1
            row[j + 1] = value
            cols[j + 1] = col

    cdef int _exclusive(self, int n, Job* job, int* out) noexcept:
        """``find_placement("exclusive", ...)``: idle GPUs, best-fit node, else (not under
        the shares model) the fewest nodes."""
        cdef int g, node, best_node, best_count, count, taken, total = 0
        cdef int* per_node = self.gpus.scratch_nodes
        cdef int width = self.gpus.node_width
        if self.gpus.indexed:  # equal memories: an idle GPU fits iff the capacity does
            if self.gpus.capacity[0] + EPS < job.memory or self.gpus.idle_total < n:
                return -1
            if n == 1:
                out[0] = self._first_idle(1)
                return 1
            per_node = self.gpus.idle_on_node
            total = self.gpus.idle_total
        else:
            memset(per_node, 0, self.gpus.num_nodes * sizeof(int))
            for g in range(self.gpus.num_gpus):
                if self._fits_idle(g, job):
                    per_node[self.gpus.gpu_node[g]] += 1
                    total += 1
        if total < n:
            return -1
        if n == 1:
            best_count = self.gpus.num_gpus + 1
            best_node = -1
            for g in range(self.gpus.num_gpus):
                if self._fits_idle(g, job):
                    if per_node[self.gpus.gpu_node[g]] < best_count:
                        best_count = per_node[self.gpus.gpu_node[g]]
                        out[0] = g
            return 1
        if n <= width:
            best_node = -1
            best_count = self.gpus.num_gpus + 1
            for node in range(self.gpus.num_nodes):
                if n <= per_node[node] < best_count:
                    best_count = per_node[node]
                    best_node = node
            if best_node >= 0:
                taken = self._take_idle(best_node, n, job, out, 0)
                self._sort(out, taken)
                return taken
        if self.gpus.shares:
            return -1
        # across nodes: the nodes with the most fitting GPUs first (ties: lower node)
        taken = 0
        for count in range(width, 0, -1):
            for node in range(self.gpus.num_nodes):
                if per_node[node] == count:
                    taken = self._take_idle(node, min(count, n - taken), job, out, taken)
                    if taken == n:
                        self._sort(out, taken)
                        return taken
        return -1

    cdef int _take_idle(self, int node, int k, Job* job, int* out, int taken) noexcept:
        cdef int col, g, got = 0
        for col in range(self.gpus.node_width):
            if got == k:
                break
            g = self.gpus.node_gpus[node * self.gpus.node_width + col]
            if g >= 0 and self._fits_idle(g, job):
                out[taken + got] = g
                got += 1
        return taken + got

    cdef void _sort(self, int* values, int n) noexcept:
        cdef int i, j, v
        for i in range(1, n):
            v = values[i]
            j = i - 1
            while j >= 0 and values[j] > v:
                values[j + 1] = values[j]
                j -= 1
            values[j + 1] = v
