# The compiled core, part 5 of 7 (included by _core.pyx): the observation and the
# action mask.

cdef class _Encoder(_Simulation):
    """The observation buffer and the action mask, updated incrementally."""

    cdef void _refresh_gpus(self) noexcept:
        cdef int i, g, new, old, k
        cdef double free_gib, load
        cdef long held
        cdef float* row
        if self.enc.dirty_n:
            self.gpus.gpu_epoch += 1
        for i in range(self.enc.dirty_n):
            g = self.enc.dirty_list[i]
            self.enc.dirty[g] = False
            free_gib = self.gpus.free_cap[g]
            held = self.gpus.holders[g]
            load = self.gpus.load[g]
            if self.enc.has_encoder:
                row = &self.enc.buffer[self.cols.gpu_at + g * self.cols.num_gpu_f]
                row[self.cols.cg_free] = <float>(
                    free_gib * self.gpus.inv_capacity[g] if free_gib > 0.0 else 0.0
                )
                row[self.cols.cg_load] = <float>(load * self.enc.inv_slots if load > 0.0 else 0.0)
                row[self.cols.cg_workers] = <float>(held * self.enc.inv_slots)
            if held == 0:
                new = 0
            elif held >= self.gpus.max_jobs:
                new = self.cols.num_frag - 1
            else:
                new = upper_bound(self.enc.frag_edges, self.enc.num_frag_edges, free_gib) + 1
            old = self.enc.category[g]
            if new != old:
                self.enc.category[g] = new
                self.enc.category_counts[old] -= 1
                self.enc.category_counts[new] += 1
                if self.enc.has_encoder:
                    self.enc.buffer[self.cols.frag_at + old] = <float>(
                        self.enc.category_counts[old] * self.enc.inv_gpus
                    )
                    self.enc.buffer[self.cols.frag_at + new] = <float>(
                        self.enc.category_counts[new] * self.enc.inv_gpus
                    )
                if new == 0:
                    self.enc.idle_gpus += 1
                elif old == 0:
                    self.enc.idle_gpus -= 1
            if held < self.gpus.max_jobs:
                new = upper_bound(self.enc.mem_values, self.enc.num_mem_values, free_gib + EPS)
            else:
                new = 0
            old = self.enc.level[g]
            if new != old:
                self.enc.level[g] = new
                if new > old:
                    for k in range(old, new):
                        self.enc.fit_counts[k] += 1
                else:
                    for k in range(new, old):
                        self.enc.fit_counts[k] -= 1
        self.enc.dirty_n = 0

    cdef void _fill_pending_window(self) noexcept:
        """The pending window's ranks (``window_pending``) for the queue as it is."""
        self._select_window(self.jobs.queue, self.jobs.queue_n, self.win.window_pending)

    cdef int _select_window(self, int* queue, int queue_n, int* out) noexcept:
        """The pending window of ``queue`` (ranks by arrival) into ``out``, in arrival
        order, and its size: the first ``W`` waiting jobs; once more wait, the first
        ``W - P`` and the ``P`` others with the least attained GPU-seconds, ties by
        arrival (``P = priority_slots``). The one rule of the window: the env's actions,
        its mask and every policy (``Simulator.pending_window``) address what it gives."""
        cdef int i, j, k, n = 0, P = self.win.priority_slots, by_arrival = self.win.W - self.win.priority_slots
        cdef double key
        if P == 0 or queue_n <= self.win.W:
            n = queue_n if queue_n < self.win.W else self.win.W
            memcpy(out, queue, n * sizeof(int))
            return n
        memcpy(out, queue, by_arrival * sizeof(int))
        for i in range(by_arrival, queue_n):  # keep the P least (key, position)
            key = self.jobs.row[queue[i]].gpu_seconds
            if n == P and key >= self.win.priority_key[P - 1]:
                continue
            k = n if n < P else P - 1
            while k > 0 and self.win.priority_key[k - 1] > key:
                self.win.priority_key[k] = self.win.priority_key[k - 1]
                self.win.priority_pos[k] = self.win.priority_pos[k - 1]
                k -= 1
            self.win.priority_key[k] = key
            self.win.priority_pos[k] = i
            if n < P:
                n += 1
        for i in range(1, P):  # back to arrival order
            k = self.win.priority_pos[i]
            j = i
            while j > 0 and self.win.priority_pos[j - 1] > k:
                self.win.priority_pos[j] = self.win.priority_pos[j - 1]
                j -= 1
            self.win.priority_pos[j] = k
        for i in range(P):
            out[by_arrival + i] = queue[self.win.priority_pos[i]]
        return self.win.W

    cdef void _scan_choices(self, bint write_mask) except *:
        """The one rule of which decisions are valid now: a schedule action for a job of
        the pending window where a strategy finds room (exclusive: idle GPUs; the other
        strategies: fragments), a suspend action for a job of the running window
        the suspension rules allow, advance while something is left to happen. With
        ``write_mask`` (the env) every action's bit is written; without (a headless
        run's ``settle``) the scan stops at the first choice and sets only
        ``has_choice`` and ``can_advance``."""
        cdef int i, s, slot, n, rank, S = self.win.S, width = self.win.W * S
        cdef bint exclusive, shared, schedule_choice = False, can_suspend = False
        cdef int* window = self.win.window_pending
        cdef Job* job
        self._refresh_gpus()
        self.win.pending_n = self.jobs.queue_n if self.jobs.queue_n < self.win.W else self.win.W
        self.win.running_n_window = self.jobs.running_n if self.jobs.running_n < self.win.R else self.win.R
        self.win.can_advance = (
            self.win.running_n_window > 0
            or self.jobs.transit_n > 0
            or self.in_system + self.jobs.finished_n < self.jobs.num_jobs
        )
        if write_mask:
            memset(self.enc.mask, 0, self.enc.num_actions * sizeof(cnp.npy_bool))
            self.enc.mask[self.enc.num_actions - 1] = self.win.can_advance
            self._fill_pending_window()
        elif self.win.priority_slots > 0 and self.jobs.queue_n > self.win.W:
            self._fill_pending_window()
        else:
            window = self.jobs.queue  # the window is the queue's head: no copy needed
        for slot in range(self.win.running_n_window):
            rank = self.jobs.running[slot]
            if write_mask:
                self.win.window_running[slot] = rank
            if self._suspendable(&self.jobs.row[rank]):
                can_suspend = True
                if not write_mask:
                    self.win.has_choice = True
                    return
                self.enc.mask[width + slot] = True
        for slot in range(self.win.pending_n):
            job = &self.jobs.row[window[slot]]
            shared = self._job_fits(job, &exclusive)
            if exclusive or shared:
                schedule_choice = True
                if not write_mask:
                    break
            if write_mask:
                # exclusive needs idle GPUs; every other strategy room on shared GPUs
                for s in range(S):
                    self.enc.mask[S * slot + s] = (
                        exclusive if self.win.strategy_code[s] == S_EXCLUSIVE else shared
                    )
        self.win.has_choice = schedule_choice or can_suspend

    cdef bint _job_fits(self, Job* job, bint* exclusive) noexcept:
        """Whether ``job`` fits now (GPU state refreshed): returns the sharing strategies'
        answer (enough GPUs with a free slot and the job's memory free) and sets
        ``exclusive`` (enough idle GPUs with its memory)."""
        cdef int n = job.num_gpus
        if not self.gpus.free_capacity_fits:  # node limits, one-node gangs, instances
            exclusive[0] = self._fits_somewhere(job, True)  # counts do not tell
            return self._fits_somewhere(job, False)
        exclusive[0] = n <= self.enc.idle_gpus
        if exclusive[0] and not self.gpus.equal_capacity:
            exclusive[0] = self._exclusive_memory_ok(job)
        return n <= self.enc.fit_counts[job.size_index]

    cdef bint _fits_somewhere(self, Job* job, bint idle) noexcept:
        """Some node (without one-node gangs, the cluster) has ``job.num_gpus`` GPUs
        that ``_fits`` (``idle``: ``_fits_idle``); for a job without GPUs, its CPU and
        host memory free."""
        cdef int node, col, g, count = 0, width = self.gpus.node_width
        if job.num_gpus == 0:
            return self._cpu_best_fit(job) >= 0
        if not self.gpus.one_node_gangs:
            for g in range(self.gpus.num_gpus):
                if self._fits_idle(g, job) if idle else self._fits(g, job):
                    count += 1
            return count >= job.num_gpus
        for node in range(self.gpus.num_nodes):
            count = 0
            for col in range(width):
                g = self.gpus.node_gpus[node * width + col]
                if g >= 0 and (self._fits_idle(g, job) if idle else self._fits(g, job)):
                    count += 1
            if count >= job.num_gpus:
                return True
        return False

    cdef int _suspend_rule(self, Job* job) noexcept:
        """The suspension rules: ``SUSPEND_OK`` for a running job under its budget and
        (after a resume) past its minimum service, else the rule it breaks."""
        if job.status != RUNNING:
            return SUSPEND_NOT_RUNNING
        if self.max_suspends >= 0 and job.suspends >= self.max_suspends:
            return SUSPEND_BUDGET
        if job.resumes > 0 and self.now - job.service_since + EPS < self.min_service:
            return SUSPEND_QUANTUM
        return SUSPEND_OK

    cdef inline bint _suspendable(self, Job* job) noexcept:
        return self._suspend_rule(job) == SUSPEND_OK

    cdef bint _exclusive_memory_ok(self, Job* job) noexcept:
        cdef int i, count
        if job.demand <= self.gpus.min_capacity + EPS:
            return True
        count = self._exclusive(job.num_gpus, job, self.gpus.scratch_gpus)
        if count < 0:
            return False
        for i in range(count):
            if not self.gpus.free_cap[self.gpus.scratch_gpus[i]] + EPS >= job.demand:
                return False
        return True

    cdef double _predicted_remaining(self, Job* job, bint* known) noexcept:
        cdef double remaining
        known[0] = False
        if self.duration_info == INFO_NONE:
            return 0.0
        remaining = job.iterations - self._done(job)
        if self.duration_info == INFO_ORACLE:
            known[0] = True
            return remaining * job.step_time
        if not job.sampled:
            return 0.0
        known[0] = True
        return remaining * job.step_time * (1.0 + job.noise)

    cdef double _predicted_work(self) noexcept:
        """Predicted GPU-seconds of work left: every waiting, running and moving job's
        predicted remaining time times its GPUs, over the jobs with a prediction."""
        cdef double work = 0.0, value
        cdef bint known
        cdef int i
        cdef Job* job
        for i in range(self.jobs.queue_n):
            job = &self.jobs.row[self.jobs.queue[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        for i in range(self.jobs.running_n):
            job = &self.jobs.row[self.jobs.running[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        for i in range(self.jobs.transit_n):
            job = &self.jobs.row[self.jobs.transit[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        return work

    cdef double _measured_step(self, Job* job, bint* known) noexcept:
        known[0] = False
        if self.duration_info == INFO_ORACLE:
            known[0] = True
            return job.step_time
        if self.duration_info == INFO_NONE or not job.sampled:
            return 0.0
        known[0] = True
        return job.step_time * (1.0 + job.noise)

    cdef void _job_row(self, float* row, Job* job) noexcept:
        """The spec columns of a pending / running row."""
        cdef int m
        row[self.cols.cj_valid] = 1.0
        row[self.cols.cj_gpus] = <float>(log2(1.0 + job.num_gpus) * self.enc.log_gpus)
        row[self.cols.cj_memory] = <float>(job.demand / self.gpus.max_capacity)
        row[self.cols.cj_intensity] = <float>job.intensity
        for m in range(self.enc.num_models):
            row[self.cols.cj_model0 + m] = 0.0
        if job.model >= 0:
            row[self.cols.cj_model0 + job.model] = 1.0

    cdef void _observe(self) except *:
        cdef int slot, rank, c
        cdef float* row
        cdef Job* job
        cdef double now = self.now, value, done, left, step, predicted, backlog
        cdef double util, free_share, fragmented, expected, waiting_gpus, t
        cdef bint known
        # pending rows
        for slot in range(self.win.W):
            row = &self.enc.buffer[self.cols.pending_at + slot * self.cols.num_pw]
            if slot >= self.win.pending_n:
                memset(row, 0, self.cols.num_pw * sizeof(float))
                continue
            job = &self.jobs.row[self.win.window_pending[slot]]
            self._job_row(row, job)
            value = log10(now - (job.queued_since - 1.0)) * INV_DECADES
            row[self.cols.cj_wait] = <float>(value if value < 1.0 else 1.0)
            row[self.cols.cj_sampled] = 1.0 if job.sampled else 0.0
            predicted = self._predicted_remaining(job, &known)
            row[self.cols.cj_known] = 1.0 if known else 0.0
            row[self.cols.cj_predicted] = <float>(log_time(predicted) if known else 0.0)
            row[self.cols.cj_suspended] = 1.0 if job.status == SUSPENDED else 0.0
            row[self.cols.cj_progress] = <float>(job.progress / job.iterations)
        # running rows
        for slot in range(self.win.R):
            row = &self.enc.buffer[self.cols.running_at + slot * self.cols.num_r]
            if slot >= self.win.running_n_window:
                memset(row, 0, self.cols.num_r * sizeof(float))
                continue
            job = &self.jobs.row[self.win.window_running[slot]]
            self._job_row(row, job)
            step = self._measured_step(job, &known)
            row[self.cols.cj_wait] = <float>log_time(job.queued_s)
            row[self.cols.cj_sampled] = 1.0 if job.sampled else 0.0
            row[self.cols.cj_known] = 1.0 if known else 0.0
            done = job.progress + job.rate * (now - job.last_update)
            if done > job.iterations:
                done = job.iterations
            left = log10(1.0 + (job.iterations - done) * step) * INV_DECADES
            row[self.cols.cj_predicted] = <float>(left if left < 1.0 else 1.0)
            row[self.cols.cj_suspended] = 0.0
            row[self.cols.cj_progress] = <float>(done / job.iterations)
            value = job.speed * self.enc.inv_max_speed
            row[self.cols.cr_speed] = <float>(value if value < 1.0 else 1.0)
            if self.cols.cr_held >= 0:
                row[self.cols.cr_held] = <float>log_time(now - job.held_since)
        # global
        row = &self.enc.buffer[self.cols.global_at]
        t = log10(1.0 + now) * INV_DECADES
        row[self.cols.cl_time] = <float>(t if t < 1.0 else 1.0)
        row[self.cols.cl_waiting] = <float>(self.jobs.queue_n * self.enc.inv_jobs)
        backlog = self.jobs.queue_n - self.win.W
        row[self.cols.cl_backlog] = <float>(backlog * self.enc.inv_jobs if backlog > 0 else 0.0)
        row[self.cols.cl_running] = <float>(self.jobs.running_n * self.enc.inv_jobs)
        row[self.cols.cl_transition] = <float>(self.jobs.transit_n * self.enc.inv_jobs)
        row[self.cols.cl_in_system] = <float>(self.in_system * self.enc.inv_jobs)
        row[self.cols.cl_finished] = <float>(self.jobs.finished_n * self.enc.inv_jobs)
        util = self.meter.util_sum * self.enc.inv_gpus
        free_share = self.meter.free_sum * self.enc.inv_total_memory
        if self.meter.free_sum > EPS:
            fragmented = self.meter.frag_sum / self.meter.free_sum
            expected = self.meter.fgd_sum / self.meter.free_sum
        else:
            fragmented = expected = 0.0
        waiting_gpus = self.win.waiting_gpus * self.enc.inv_gpus
        row[self.cols.cl_util] = <float>clip01(util)
        row[self.cols.cl_alloc] = <float>(self.meter.allocated * self.enc.inv_gpus)
        row[self.cols.cl_free] = <float>clip01(free_share)
        row[self.cols.cl_frag] = <float>clip01(fragmented)
        row[self.cols.cl_expected] = <float>clip01(expected)
        row[self.cols.cl_waiting_gpus] = <float>(waiting_gpus if waiting_gpus < 1.0 else 1.0)
        row[self.cols.cl_idle] = <float>(self.enc.idle_gpus * self.enc.inv_gpus)
        row[self.cols.cl_advance] = 1.0 if self.win.can_advance else 0.0
        if self.cols.cp_pack >= 0 or self.cols.cr_shares >= 0:
            self._observe_placement()
        if self.cols.cr_rival >= 0:
            self._observe_rivals()
        if self.cols.cp_drain >= 0 or self.cols.cr_drain >= 0:
            self._observe_drain()

    cdef void _observe_placement(self) except *:
        """The ``pack_load`` / ``spread_load`` and ``shares_gpu`` columns (see the feature
        registry for their meaning). A strategy's choice depends only on the GPUs
        and on the job's shape, so jobs of one shape share a search, and the answers hold
        until a GPU changes (``gpu_epoch``)."""
        cdef int slot, rank, shape, s, i
        cdef double peak
        cdef bint shares
        cdef float* row
        cdef Job* job
        if self.enc.dirty_n:  # GPUs changed since the mask last refreshed them (not in env steps)
            self.gpus.gpu_epoch += 1
        for slot in range(self.win.pending_n if self.cols.cp_pack >= 0 else 0):
            rank = self.win.window_pending[slot]
            job = &self.jobs.row[rank]
            shape = self.jobs.shape_of[rank]
            if self.enc.shape_epoch[shape] != self.gpus.gpu_epoch:
                self.enc.shape_epoch[shape] = self.gpus.gpu_epoch
                self.enc.shape_peak[2 * shape] = self._peak_load(rank, S_PACK)
                self.enc.shape_peak[2 * shape + 1] = self._peak_load(rank, S_SPREAD)
            row = &self.enc.buffer[self.cols.pending_at + slot * self.cols.num_pw + self.cols.cp_pack]
            for s in range(2):
                peak = self.enc.shape_peak[2 * shape + s]
                if peak == INFINITY:
                    row[s] = 0.0
                    continue
                peak = (peak + job.intensity) * self.enc.inv_slots
                row[s] = <float>(peak if peak < 1.0 else 1.0)
        for slot in range(self.win.running_n_window if self.cols.cr_shares >= 0 else 0):
            job = &self.jobs.row[self.win.window_running[slot]]
            shares = False
            for i in range(job.held):
                if self.gpus.holders[self.jobs.gpus_of[job.offset + i]] > 1:
                    shares = True
                    break
            row = &self.enc.buffer[self.cols.running_at + slot * self.cols.num_r + self.cols.cr_shares]
            row[0] = 1.0 if shares else 0.0

    cdef double _peak_load(self, int rank, int strategy) except? -1.0:
        """The largest load on the GPUs ``strategy`` gives the job now (+inf: none fit)."""
        cdef int* gpus = self.gpus.scratch_gpus
        cdef int i, count = self._find_placement(rank, strategy, gpus)
        cdef double peak
        if count <= 0:  # none fits, or a job without GPUs
            return INFINITY if count < 0 else 0.0
        peak = self.gpus.load[gpus[0]]
        for i in range(1, count):
            if self.gpus.load[gpus[i]] > peak:
                peak = self.gpus.load[gpus[i]]
        return peak

    cdef void _observe_rivals(self) noexcept:
        """The ``rival_wait`` / ``rival_remaining`` columns: one pass over the whole queue,
        by GPUs requested."""
        cdef int i, slot, n
        cdef long seen = self.win.rival_pass + 1
        cdef double now = self.now, wait, predicted
        cdef bint known
        cdef float* row
        cdef Job* job
        self.win.rival_pass = seen
        for i in range(self.jobs.queue_n):
            job = &self.jobs.row[self.jobs.queue[i]]
            n = job.num_gpus
            wait = now - job.queued_since
            if self.win.rival_seen[n] != seen:
                self.win.rival_seen[n] = seen
                self.win.rival_wait[n] = wait
                self.win.rival_left[n] = INFINITY
            elif wait > self.win.rival_wait[n]:
                self.win.rival_wait[n] = wait
            predicted = self._predicted_remaining(job, &known)
            if known and predicted < self.win.rival_left[n]:
                self.win.rival_left[n] = predicted
        for slot in range(self.win.running_n_window):
            n = self.jobs.row[self.win.window_running[slot]].num_gpus
            row = &self.enc.buffer[self.cols.running_at + slot * self.cols.num_r + self.cols.cr_rival]
            if self.win.rival_seen[n] != seen:
                row[0] = 0.0
                row[1] = 0.0
                continue
            row[0] = <float>log_time(self.win.rival_wait[n])
            predicted = self.win.rival_left[n]
            row[1] = <float>(0.0 if predicted == INFINITY else log_time(predicted))

    cdef void _observe_drain(self) noexcept:
        """The ``drain_share`` columns (the sum runs waiting, running, in transition)."""
        cdef int slot
        cdef double drain = self._predicted_work() * self.enc.inv_gpus, left
        cdef bint known
        for slot in range(self.win.pending_n if self.cols.cp_drain >= 0 else 0):
            left = self._predicted_remaining(&self.jobs.row[self.win.window_pending[slot]], &known)
            self.enc.buffer[self.cols.pending_at + slot * self.cols.num_pw + self.cols.cp_drain] = <float>(
                left / (left + drain) if known and left != 0.0 else 0.0
            )
        for slot in range(self.win.running_n_window if self.cols.cr_drain >= 0 else 0):
            left = self._predicted_remaining(&self.jobs.row[self.win.window_running[slot]], &known)
            self.enc.buffer[self.cols.running_at + slot * self.cols.num_r + self.cols.cr_drain] = <float>(
                left / (left + drain) if known and left != 0.0 else 0.0
            )
