# The compiled core, part 3 of 7 (included by _core.pyx): placement strategies, the
# index of GPUs with room, and FGD's six rules under the shares model.

cdef enum:
    MAX_SCORE = 100  # the Kubernetes scheduler's node scores: 0 to 100
    MAX_SPEC_CPU = 128000  # the FGD simulator's normalisers [milli-cores]
    MAX_SPEC_GPU = 8000  # [milli-GPU]

cdef class _Placement(_Events):
    """Where a job's workers go under each strategy (``find_placement``)."""

    cdef int _find_placement(self, int rank, int strategy, int* out) except -2:
        """GPUs (sorted, into ``out``) the strategy gives the job now; their count or -1.
        The placement's node (of its first GPU) goes to ``gpus.chosen_node``. A job
        without GPUs (the shares model) gets a node only: FGD's rules score the nodes
        as for any task; every other strategy takes ``_cpu_best_fit``'s."""
        cdef Job* job = &self.jobs.row[rank]
        cdef int count
        if job.num_gpus == 0:
            if S_SHARE_RANDOM <= strategy <= S_SHARE_FGD:
                return self._share_rule(strategy, rank, job, out)
            self.gpus.chosen_node = self._cpu_best_fit(job)
            return 0 if self.gpus.chosen_node >= 0 else -1
        count = self._find_gpus(rank, strategy, job, out)
        if count > 0:
            self.gpus.chosen_node = self.gpus.gpu_node[out[0]]
        return count

    cdef int _cpu_best_fit(self, Job* job) noexcept:
        """The node for a job without GPUs: of those with its CPU and host memory free,
        the one with the least CPU left after it (the lower node on ties), or -1."""
        cdef int node, first, best_node = -1
        cdef double left, best = INFINITY
        for node in range(self.gpus.num_nodes):
            first = self.gpus.node_gpus[node * self.gpus.node_width]
            if first < 0 or not self._fits_node(first, job):
                continue
            left = self.gpus.node_cpu_free[node] - job.cpu
            if best_node < 0 or left < best:  # nodes without a CPU limit leave inf
                best = left
                best_node = node
        return best_node

    cdef int _find_gpus(self, int rank, int strategy, Job* job, int* out) noexcept:
        """``_find_placement`` of a job with GPUs: their count or -1."""
        cdef int n = job.num_gpus
        cdef int g, best_g
        cdef double score, best
        if strategy == S_EXCLUSIVE:
            return self._exclusive(n, job, out)
        if strategy >= S_MIG_FIT:
            return self._mig_gang(strategy, n, job, out)  # refused unless rules.mig
        if strategy >= S_SHARE_RANDOM:
            return self._share_rule(strategy, rank, job, out)  # refused unless rules.active
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
        return self._fits_with(self.gpus.free_cap[g], self.gpus.holders[g], g, job)

    cdef inline bint _fits_with(self, double free, long held, int g, Job* job) noexcept:
        """``_fits`` given GPU ``g``'s free memory (share) and workers, already read."""
        if not (free + EPS >= job.demand and held < self.gpus.max_jobs):
            return False
        return self.gpus.sharing == SHARING_MEMORY or self._fits_model(g, job)

    @cython.final
    cdef bint _fits_model(self, int g, Job* job) noexcept:
        """``_fits``'s part beyond the free capacity, by sharing model (the fit's one
        dispatch; out of line: ``_fits`` stays small enough for the C compiler to inline
        into every placement loop): under ``shares`` the job's GPU model and its node's
        CPU and host memory, under ``mig`` an idle instance of a profile the job fits."""
        if self.gpus.sharing == SHARING_SHARES:
            return self._node_fits(self.gpus.gpu_node[g], g, job)
        return self._mig_slot(g, job, S_MIG_FIT) >= 0

    @cython.final
    cdef bint _fits_node(self, int g, Job* job) noexcept:
        """``_fits``'s shares-model part."""
        return self._node_fits(self.gpus.gpu_node[g], g, job)

    cdef inline bint _node_fits(self, int node, int g, Job* job) noexcept:
        """``_fits_node`` of GPU ``g`` on ``node`` (a scan of the nodes knows the node)."""
        return (  # & rather than and: no branch to mispredict in the nodes' scans
            (job.model_mask >> self.gpus.gpu_model[g]) & 1
            & (self.gpus.node_cpu_free[node] + EPS >= job.cpu)
            & (self.gpus.node_mem_free[node] + EPS >= job.host_mem)
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
        if self.gpus.idle_total and self.gpus.capacity[0] + EPS >= job.demand:
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
        cdef double free_gib = self.gpus.free_cap[g], before, after, left
        cdef double memory = job.demand
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
        if total < n or self.gpus.one_node_gangs:
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
            if self.gpus.capacity[0] + EPS < job.demand or self.gpus.idle_total < n:
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
        if self.gpus.one_node_gangs:
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

    # ------------------------------------------------- FGD's rules (the shares model)
    # The rules of Weng et al., ATC'23, as baselines/openb states them for the paper's
    # static experiment (tests/baselines/test_share_rules.py checks that both place the same
    # tasks on the same GPUs); here the node state is the core's own: a GPU's free share
    # is free_cap (whole milli-GPU values, exact in a double), a node's CPU
    # node_cpu_free. Ties between nodes go to the lower node (in FGD's static experiment,
    # _static.pxi, to the lower ShareRules.tie_rank).

    cdef inline int _share_tag(self, Job* job) noexcept:
        """The kind tag share_clustering groups by: 0 for a share of one GPU, else the
        count of whole GPUs."""
        if job.num_gpus == 1 and job.demand < GPU_MILLI_F:
            return 0
        return job.num_gpus if job.num_gpus <= self.gpus.node_width else self.gpus.node_width

    cdef void _node_changed(self, int node, Job* job, int delta) noexcept:
        """A job took (``delta`` 1) or left (-1) its place on ``node``: its cached scores
        are stale, and its kinds of GPU task change."""
        self.rules.node_version[node] += 1
        if job.num_gpus:
            self.rules.node_tags[node * (self.gpus.node_width + 1) + self._share_tag(job)] += delta

    cdef inline double _hold_node(self, int node, Job* job, int delta) noexcept:
        """What a job takes (``delta`` 1) or gives back (-1) on its node beyond its GPUs,
        by sharing model (occupy's and release's one dispatch): under ``shares`` its CPU
        and host memory, once, and FGD's caches of the node; under ``mig`` an instance per
        worker; nothing under ``memory``. Returns how long the job waits for what it took
        to be ready [s] (an instance still being created; 0 else)."""
        if self.gpus.sharing == SHARING_SHARES and node >= 0:
            if delta > 0:
                self.gpus.node_cpu_free[node] -= job.cpu
                self.gpus.node_mem_free[node] -= job.host_mem
            else:
                self.gpus.node_cpu_free[node] += job.cpu
                self.gpus.node_mem_free[node] += job.host_mem
            self._node_changed(node, job, delta)
        elif self.gpus.sharing == SHARING_MIG:
            return self._mig_hold(job, delta)
        return 0.0

    # ------------------------------------------------------------------ MIG instances

    cdef int _mig_slot(self, int g, Job* job, int rule) noexcept:
        """The slot of the instance of GPU ``g`` a worker of ``job`` takes under ``rule``,
        or -1. The instance the job reserves there, if it has room; else, of the instances
        with room (idle, or MPS-shared) that no job reserves, of a profile the job fits,
        the smallest (``S_MIG_FIT``) or the largest (``S_MIG_LARGEST``) in compute, then
        memory; ties to the lower start."""
        cdef MigTable mig = self.gpus.mig
        cdef int i, p, best = -1, best_key = 0, key, base = g * MIG_SLOTS
        cdef int rank = <int>(job - self.jobs.row)
        cdef double* speed = &self.jobs.mig_speed[rank * MIG_MAX_PROFILES]
        if mig.res_gpu[rank] == g:
            i = mig.res_slot[rank]
            p = mig.inst_profile[base + i]
            if p >= 0 and speed[p] > 0.0 and (mig.inst_count[base + i] == 0 or mig.inst_mps[base + i]):
                return i
        for i in range(MIG_SLOTS):
            p = mig.inst_profile[base + i]
            if (
                p < 0 or mig.inst_res[base + i] > 0 or speed[p] <= 0.0
                or (mig.inst_count[base + i] > 0 and not mig.inst_mps[base + i])
            ):
                continue
            key = mig.compute[p] * 16 + mig.memory[p]
            if rule == S_MIG_LARGEST:
                key = -key
            if best < 0 or key < best_key or (key == best_key and mig.inst_start[base + i] < mig.inst_start[base + best]):
                best = i
                best_key = key
        return best

    cdef double _mig_hold(self, Job* job, int delta) noexcept:
        """Occupy's and release's ``mig`` entry: each worker takes (``delta`` 1) the
        instance ``_mig_slot`` picks on its GPU under ``mig.rule`` (the job's reservation,
        if any, is used up), and its capacity, load and speed follow the instance (on an
        MPS-shared one: the smallest profile the job fits, at ``mps_speed`` of its speed
        there); or gives it back (-1). Returns how long until the instances it took are
        created [s]."""
        cdef MigTable mig = self.gpus.mig
        cdef int i, g, slot, p, k, base
        cdef int rank = <int>(job - self.jobs.row)
        cdef double wait = 0.0
        for i in range(job.held):
            g = self.jobs.gpus_of[job.offset + i]
            k = job.offset + i
            base = g * MIG_SLOTS
            if delta < 0:
                mig.inst_count[base + self.jobs.workers[k].inst] -= 1
                continue
            slot = self._mig_slot(g, job, mig.rule)
            p = mig.inst_profile[base + slot]
            mig.inst_count[base + slot] += 1
            if mig.inst_ready[base + slot] - self.now > wait:
                wait = mig.inst_ready[base + slot] - self.now
            self.jobs.workers[k].inst = slot
            if mig.inst_mps[base + slot]:
                self.jobs.workers[k].take = job.demand
                self.jobs.workers[k].speed = mig.mps_speed * self.jobs.mig_speed[rank * MIG_MAX_PROFILES + p]
            else:
                self.jobs.workers[k].take = mig.compute[p]
                self.jobs.workers[k].speed = self.jobs.mig_speed[rank * MIG_MAX_PROFILES + p]
            self.jobs.workers[k].load = self.jobs.workers[k].take / <double>mig.compute_slices
        if delta > 0:
            self._mig_unreserve(rank)
        return wait

    cdef void _mig_unreserve(self, int rank) noexcept:
        """Drop the reservation of job ``rank``, if any."""
        cdef MigTable mig = self.gpus.mig
        if mig.res_gpu[rank] >= 0:
            mig.inst_res[mig.res_gpu[rank] * MIG_SLOTS + mig.res_slot[rank]] -= 1
            mig.res_gpu[rank] = -1
            mig.res_slot[rank] = -1

    cdef inline void _take_rule(self, int strategy) noexcept:
        """Which instance the next occupy takes on each chosen GPU: ``mig_largest``'s,
        else ``mig_fit``'s (every other strategy's; set before each ``_occupy``)."""
        self.gpus.mig.rule = S_MIG_LARGEST if strategy == S_MIG_LARGEST else S_MIG_FIT

    cdef int _mig_gang(self, int strategy, int n, Job* job, int* out) noexcept:
        """``find_placement`` under MIG's rules: the ``n`` GPUs whose instance the rule
        picks ranks first (``_mig_slot``'s order; a GPU where the job reserves an instance
        first; ties: a GPU the job held before its checkpoint, then the lower GPU), sorted."""
        cdef int g, i, j, slot, p, taken = 0
        cdef double key
        cdef double* score = self.gpus.scratch_score
        cdef int* order = self.gpus.scratch_gpus
        cdef int* prev = &self.jobs.prev_of[job.offset]
        for g in range(self.gpus.num_gpus):
            slot = self._mig_slot(g, job, strategy) if self._fits(g, job) else -1
            if slot < 0:
                continue
            p = self.gpus.mig.inst_profile[g * MIG_SLOTS + slot]
            key = self.gpus.mig.compute[p] * 16 + self.gpus.mig.memory[p]
            score[g] = -key if strategy == S_MIG_LARGEST else key
            if self.gpus.mig.res_gpu[<int>(job - self.jobs.row)] == g:
                score[g] = -INFINITY  # its reserved instance first
            elif job.status == SUSPENDED:
                for i in range(job.prev_held):
                    if prev[i] == g:
                        score[g] -= 0.5  # keys are whole: the job's own GPU wins ties only
            j = taken  # insertion sort by (score, GPU)
            while j > 0 and score[order[j - 1]] > score[g]:
                order[j] = order[j - 1]
                j -= 1
            order[j] = g
            taken += 1
        if taken < n:
            return -1
        for i in range(n):
            out[i] = order[i]
        self._sort(out, n)
        return n

    cdef inline bint _col_fits(self, int g, Job* job) noexcept:
        """``_fits`` of a node column's GPU ``g`` (-1: padding) once its node fits."""
        return g >= 0 and self.gpus.free_cap[g] + EPS >= job.demand and self.gpus.holders[g] < self.gpus.max_jobs

    @cython.final
    cdef inline int _node_holds(self, int node, Job* job) noexcept:
        """How many GPUs of ``node`` may take a worker of ``job`` (``_fits``); -1 when
        the node lacks the job's CPU, host memory or GPU model."""
        cdef int col, g, count = 0, width = self.gpus.node_width
        cdef int first = self.gpus.node_gpus[node * width]
        if first < 0:  # a node without GPUs (FGD's static experiment): CPU-only jobs
            return 0 if job.num_gpus == 0 and self.gpus.node_cpu_free[node] + EPS >= job.cpu and (
                self.gpus.node_mem_free[node] + EPS >= job.host_mem) else -1
        if not self._node_fits(node, first, job):
            return -1
        for col in range(width):
            g = self.gpus.node_gpus[node * width + col]
            if g < 0:  # the padding, at the end of the row
                break
            count += self._col_fits(g, job)
        return count

    cdef double _free_total(self, int node) noexcept:
        cdef int col, g, width = self.gpus.node_width
        cdef double total = 0.0
        for col in range(width):
            g = self.gpus.node_gpus[node * width + col]
            if g >= 0:
                total += self.gpus.free_cap[g]
        return total

    cdef int _tightest_col(self, int node, Job* job) noexcept:
        """The column of the GPU with the least free share that takes the worker (the
        lower column on ties), or -1."""
        cdef int col, g, best = -1, width = self.gpus.node_width
        cdef double best_free = INFINITY
        for col in range(width):
            g = self.gpus.node_gpus[node * width + col]
            if self._col_fits(g, job) and self.gpus.free_cap[g] < best_free:
                best = col
                best_free = self.gpus.free_cap[g]
        return best

    cdef long long _idle_cols(self, int node, int count) noexcept:
        """Bit mask of the node's first ``count`` idle GPUs by column."""
        cdef int col, g, taken = 0, width = self.gpus.node_width
        cdef long long mask = 0
        for col in range(width):
            if taken == count:
                break
            g = self.gpus.node_gpus[node * width + col]
            if g >= 0 and self.gpus.holders[g] == 0:
                mask |= (<long long>1) << col
                taken += 1
        return mask

    cdef double _node_fragment(self, int node, double cpu_free, double* free) noexcept:
        """The node's expected fragment for the target workload, its GPUs' free shares
        in ``free`` (by column) and its free CPU ``cpu_free`` (baselines/openb/
        fragmentation.py: the categories summed in the artifact's order).  [milli-GPU]"""
        cdef double lack_both = 0.0, lack_gpu = 0.0, lack_cpu = 0.0
        cdef double cpu_ok = 0.0, cpu_lack = 0.0, no_access = 0.0, weight, idle = 0.0
        cdef double too_small, milli
        cdef int t, col, holding, width = self.gpus.node_width
        cdef int first = self.gpus.node_gpus[node * width]
        cdef long long model_bit
        cdef bint cpu_fits
        if first < 0:  # a node without GPUs (FGD's static experiment): no fragment
            return 0.0
        model_bit = (<long long>1) << self.gpus.gpu_model[first]
        for col in range(width):
            if self.gpus.node_gpus[node * width + col] >= 0:
                idle += free[col]
        for t in range(self.rules.num_typical):
            weight = self.rules.t_freq[t]
            milli = self.rules.t_milli[t]
            cpu_fits = cpu_free >= self.rules.t_cpu[t]
            if milli == 0.0:
                if cpu_fits:
                    cpu_ok += weight * idle
                else:
                    cpu_lack += weight * idle
            elif (self.rules.t_mask[t] & model_bit) == 0:
                no_access += weight * idle
            else:
                holding = 0
                too_small = 0.0
                for col in range(width):
                    if self.gpus.node_gpus[node * width + col] < 0:
                        continue
                    if free[col] >= milli:
                        holding += 1
                    else:
                        too_small += free[col]
                if holding >= self.rules.t_num[t]:
                    if cpu_fits:
                        lack_gpu += weight * too_small
                    else:
                        lack_cpu += weight * idle
                elif cpu_fits:
                    lack_gpu += weight * idle
                else:
                    lack_both += weight * idle
        return 0.0 + lack_both + lack_gpu + lack_cpu + cpu_ok + cpu_lack + no_access

    cdef double _node_fragment_now(self, int node) noexcept:
        """``_node_fragment`` of the node as it is (cached per node version)."""
        cdef int col, g, width = self.gpus.node_width
        cdef double* free = self.rules.after
        if self.rules.frag_version[node] != self.rules.node_version[node]:
            for col in range(width):
                g = self.gpus.node_gpus[node * width + col]
                free[col] = self.gpus.free_cap[g] if g >= 0 else 0.0
            self.rules.node_frag[node] = self._node_fragment(node, self.gpus.node_cpu_free[node], free)
            self.rules.frag_version[node] = self.rules.node_version[node]
        return self.rules.node_frag[node]

    cdef long long _fgd_score(self, int node, int rank, Job* job) noexcept:
        """share_fgd's score of ``node`` (the sigmoid of the fragmentation it saves),
        and in ``fgd_cols`` the GPU columns it picks; cached per (request kind, node
        version)."""
        cdef int kind = self.rules.job_kind[rank], col, g, width = self.gpus.node_width
        cdef long at = <long>kind * self.rules.num_nodes + node
        cdef double before, after, cpu_after
        cdef long long best = -1, score, mask = 0
        cdef double* free = self.rules.after
        if self.rules.fgd_version[at] == self.rules.node_version[node]:
            return self.rules.fgd_score[at]
        before = self._node_fragment_now(node)
        cpu_after = self.gpus.node_cpu_free[node] - job.cpu
        for col in range(width):
            g = self.gpus.node_gpus[node * width + col]
            free[col] = self.gpus.free_cap[g] if g >= 0 else 0.0
        if job.num_gpus == 1 and job.demand < GPU_MILLI_F:
            for col in range(width):
                if not self._col_fits(self.gpus.node_gpus[node * width + col], job):
                    continue
                free[col] -= job.demand
                after = self._node_fragment(node, cpu_after, free)
                free[col] += job.demand
                score = <long long>(1.0 / (1.0 + exp(-(before - after) / GPU_MILLI_F)) * MAX_SCORE)
                if best < 0 or score > best:
                    best = score
                    mask = (<long long>1) << col
        else:
            mask = self._idle_cols(node, job.num_gpus)
            for col in range(width):
                if (mask >> col) & 1:
                    free[col] -= job.demand
            after = self._node_fragment(node, cpu_after, free)
            best = <long long>(1.0 / (1.0 + exp(-(before - after) / GPU_MILLI_F)) * MAX_SCORE)
        self.rules.fgd_score[at] = best
        self.rules.fgd_cols[at] = mask
        self.rules.fgd_version[at] = self.rules.node_version[node]
        return best

    cdef inline double _scored_cpu(self, int node) noexcept:
        """The node's free CPU as DotProd and BestFit score it: a node without a CPU
        limit (inf) counts as the normaliser's 128 cores, so that scores stay finite."""
        cdef double free = self.gpus.node_cpu_free[node]
        return free if free < INFINITY else MAX_SPEC_CPU

    cdef long long _rule_score(self, int strategy, int node, int rank, Job* job) noexcept:
        """A node's score under one of the rules (share_bestfit: its raw score)."""
        cdef double dot, left_over, total_milli = job.num_gpus * job.demand
        cdef long long kinds = 0, tag, quarter = MAX_SCORE // 4, band, fullness, idle, score
        cdef int col, g, count = 0, width = self.gpus.node_width
        cdef int* tags
        cdef double free
        if strategy == S_SHARE_DOTPROD:
            dot = (self._scored_cpu(node) / MAX_SPEC_CPU) * (job.cpu / MAX_SPEC_CPU) + (
                self._free_total(node) / MAX_SPEC_GPU) * (total_milli / MAX_SPEC_GPU)
            return <long long>(MAX_SCORE * (1 - dot / 2))
        if strategy == S_SHARE_BESTFIT:
            left_over = (self._scored_cpu(node) - job.cpu) / MAX_SPEC_CPU * 0.5 + (
                self._free_total(node) - total_milli) / MAX_SPEC_GPU * 0.5
            return <long long>((1.0 - left_over) * MAX_SCORE)
        if strategy == S_SHARE_CLUSTERING:
            if job.num_gpus == 0:  # no kind of GPU task: every node alike
                return 0
            tags = &self.rules.node_tags[node * (width + 1)]
            for col in range(width + 1):
                if tags[col] > 0:
                    kinds |= (<long long>1) << col
            tag = (<long long>1) << self._share_tag(job)
            fullness = quarter * <long long>(MAX_SPEC_GPU - self._free_total(node)) / MAX_SPEC_GPU
            if kinds & tag:
                band = 3 if kinds == tag else 2
            else:
                band = 1 if kinds == 0 else 0
            return fullness + band * quarter
        if strategy == S_SHARE_PACKING:
            if job.num_gpus == 0:  # nothing to pack: every node alike
                return 0
            idle = 0
            for col in range(width):
                g = self.gpus.node_gpus[node * width + col]
                if g >= 0:
                    count += 1
                    if self.gpus.holders[g] == 0:
                        idle += 1
            if idle == count:
                score = MAX_SCORE // 3 - idle
                return score if score > idle else idle
            if job.demand >= GPU_MILLI_F:  # whole GPUs: only idle ones hold them
                score = MAX_SCORE // 2 - job.num_gpus
                return score if score > MAX_SCORE // 3 else MAX_SCORE // 3
            free = self.gpus.free_cap[self.gpus.node_gpus[node * width + self._tightest_col(node, job)]]
            if free >= GPU_MILLI_F:
                score = MAX_SCORE // 2 - 1
                return score if score > MAX_SCORE // 3 else MAX_SCORE // 3
            score = MAX_SCORE - (<long long>free * 100 / GPU_MILLI) / 10
            return score if score > MAX_SCORE // 2 else MAX_SCORE // 2
        return self._fgd_score(node, rank, job)

    cdef inline bint _ties_before(self, int node, int other) noexcept:
        """Whether ``node`` wins a tie of scores against ``other``, a lower node: only by a
        lower ``ShareRules.tie_rank`` (set in FGD's static experiment only)."""
        return self.rules.tie_rank != NULL and self.rules.tie_rank[node] < self.rules.tie_rank[other]

    cdef int _share_rule(self, int strategy, int rank, Job* job, int* out) noexcept:
        """``find_placement`` under one of FGD's rules: the node of highest score among
        those that hold the job (the lower node on ties, or the lower ``tie_rank``), and
        GPUs inside it."""
        cdef int node, i, count = 0, holding, col, width = self.gpus.node_width, best_node = -1
        cdef long long score, best = 0, lowest = 0, highest = 0, mask = 0
        cdef int* feasible = self.rules.feasible
        for node in range(self.gpus.num_nodes):
            feasible[count] = node  # kept if the node holds the job (no branch to mispredict)
            count += self._node_holds(node, job) >= job.num_gpus
        if count == 0:
            return -1
        if strategy == S_SHARE_RANDOM:
            best_node = feasible[<int>(self.rules.node_draw[rank] * count)]
        elif strategy == S_SHARE_BESTFIT:
            for i in range(count):
                score = self._rule_score(strategy, feasible[i], rank, job)
                self.rules.raw[i] = score
                if i == 0 or score < lowest:
                    lowest = score
                if i == 0 or score > highest:
                    highest = score
            for i in range(count):
                score = 0 if highest == lowest else (
                    (self.rules.raw[i] - lowest) * MAX_SCORE / (highest - lowest))
                if best_node < 0 or score > best or (score == best and self._ties_before(feasible[i], best_node)):
                    best_node = feasible[i]
                    best = score
        else:
            for i in range(count):
                score = self._rule_score(strategy, feasible[i], rank, job)
                if best_node < 0 or score > best or (score == best and self._ties_before(feasible[i], best_node)):
                    best_node = feasible[i]
                    best = score
        node = best_node
        self.gpus.chosen_node = node
        if strategy == S_SHARE_FGD:
            self._fgd_score(node, rank, job)  # cached: the columns of the chosen node
            mask = self.rules.fgd_cols[<long>self.rules.job_kind[rank] * self.rules.num_nodes + node]
        elif job.num_gpus == 1 and job.demand < GPU_MILLI_F:
            if strategy == S_SHARE_RANDOM:
                holding = <int>(self.rules.gpu_draw[rank] * self._node_holds(node, job))
                for col in range(width):
                    if self._col_fits(self.gpus.node_gpus[node * width + col], job):
                        if holding == 0:
                            mask = (<long long>1) << col
                            break
                        holding -= 1
            else:
                mask = (<long long>1) << self._tightest_col(node, job)
        else:
            mask = self._idle_cols(node, job.num_gpus)
        count = 0
        for col in range(width):
            if (mask >> col) & 1:
                out[count] = self.gpus.node_gpus[node * width + col]
                count += 1
        self._sort(out, count)
        return count
