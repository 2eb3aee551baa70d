# The compiled core, part 4 of 7 (included by _core.pyx): job dynamics: memory and
# compute bookkeeping, interference, rates, starts, stops, events.

cdef class _Simulation(_Placement):
    """Jobs running, sharing, suspending and finishing as simulated time advances."""

    cdef void _record(self) except *:
        cdef double* row
        if not self.meter.record_timeline:
            return
        if self.meter.timeline_n and self.meter.timeline[(self.meter.timeline_n - 1) * 8] == self.now:
            row = &self.meter.timeline[(self.meter.timeline_n - 1) * 8]
        else:
            if self.meter.timeline_n == self.meter.timeline_cap:
                self.meter.timeline_cap *= 2
                self.meter.timeline = <double*>realloc(
                    self.meter.timeline, self.meter.timeline_cap * 8 * sizeof(double)
                )
                if self.meter.timeline == NULL:
                    raise MemoryError()
            row = &self.meter.timeline[self.meter.timeline_n * 8]
            self.meter.timeline_n += 1
        row[0] = self.now
        row[1] = self.meter.util_sum
        row[2] = <double>self.meter.allocated
        row[3] = self.meter.free_sum
        row[4] = self.meter.frag_sum
        row[5] = self.meter.fgd_sum
        row[6] = <double>self.in_system
        row[7] = <double>self.jobs.queue_n

    cdef inline void _mark(self, int g) noexcept:
        if not self.enc.dirty[g]:
            self.enc.dirty[g] = True
            self.enc.dirty_list[self.enc.dirty_n] = g
            self.enc.dirty_n += 1

    cdef inline int _queue_position(self, int rank) noexcept:
        """Where ``rank`` is or goes in the sorted queue (``bisect_left``)."""
        cdef int lo = 0, hi = self.jobs.queue_n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.jobs.queue[mid] < rank:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef void _enqueue(self, int rank) noexcept:
        cdef int lo = self._queue_position(rank)
        memmove(&self.jobs.queue[lo + 1], &self.jobs.queue[lo], (self.jobs.queue_n - lo) * sizeof(int))
        self.jobs.queue[lo] = rank
        self.jobs.queue_n += 1
        self.jobs.row[rank].queued_since = self.now

    cdef void _dequeue(self, int rank) noexcept:
        cdef int lo = self._queue_position(rank)
        memmove(&self.jobs.queue[lo], &self.jobs.queue[lo + 1], (self.jobs.queue_n - lo - 1) * sizeof(int))
        self.jobs.queue_n -= 1
        cdef Job* job = &self.jobs.row[rank]
        job.queued_s += self.now - job.queued_since

    cdef inline double _done(self, Job* job) noexcept:
        """Iterations the job has done as of now (at most all of them)."""
        cdef double done = job.progress + job.rate * (self.now - job.last_update)
        return job.iterations if job.iterations < done else done

    cdef inline void _fold(self, Job* job) noexcept:
        if job.rate > 0.0:
            job.progress = self._done(job)
        job.last_update = self.now

    cdef void _touch_memory(self, int* gpus, int count) noexcept:
        cdef int i, g, alloc, fits
        cdef long held
        cdef double free_gib, frag, fgd
        for i in range(count):
            g = gpus[i]
            self._mark(g)
            free_gib = self.gpus.free_cap[g]
            held = self.gpus.holders[g]
            alloc = 1 if held > 0 else 0
            self.meter.allocated += alloc - self.meter.alloc_part[g]
            self.meter.alloc_part[g] = alloc
            self.meter.free_sum += free_gib - self.meter.free_part[g]
            self.meter.free_part[g] = free_gib
            if held > 0 and (free_gib + EPS < self.meter.median_worker or held >= self.gpus.max_jobs):
                frag = free_gib
            else:
                frag = 0.0
            self.meter.frag_sum += frag - self.meter.frag_part[g]
            self.meter.frag_part[g] = frag
            if held >= self.gpus.max_jobs:
                fgd = free_gib
            else:
                fits = upper_bound(self.meter.reference, self.meter.num_reference, free_gib + EPS)
                fgd = free_gib * (1.0 - <double>fits / <double>self.meter.num_reference)
            self.meter.fgd_sum += fgd - self.meter.fgd_part[g]
            self.meter.fgd_part[g] = fgd

    cdef void _touch_compute(self, int* gpus, int count, int force) except *:
        """The computing workers of ``gpus`` changed (``force``: a rank or -1)."""
        cdef int i, j, g, k, rank, n = 0
        cdef double load, util, contention
        cdef int* affected = self.jobs.touched_jobs
        cdef bint seen
        for i in range(count):
            g = gpus[i]
            self._mark(g)
            k = self.gpus.computing[g]
            load = self.gpus.load[g]
            if k > 0:
                if self.measured:
                    self.gpus.factor[g] = self._slowest_measured(g)
                elif self.interference_py is not None:
                    self.gpus.factor[g] = self._python_factor(g, k, load)
                elif self.interference:
                    self.gpus.factor[g] = contention_factor(load, k, self.alpha)
                else:
                    self.gpus.factor[g] = 1.0
            else:
                self.gpus.factor[g] = 1.0
            for j in range(self.gpus.gpu_jobs_n[g]):
                rank = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
                seen = False
                for k in range(n):
                    if affected[k] == rank:
                        seen = True
                        break
                if not seen:
                    affected[n] = rank
                    n += 1
            util = load if load < 1.0 else 1.0
            self.meter.util_sum += util - self.meter.util_part[g]
            self.meter.util_part[g] = util
        if force >= 0:
            seen = False
            for k in range(n):
                if affected[k] == force:
                    seen = True
                    break
            if not seen:
                affected[n] = force
                n += 1
        for i in range(n):
            rank = affected[i]
            if self.jobs.row[rank].status == RUNNING:
                self._update_rate(rank, rank == force)

    cdef double _python_factor(self, int g, int k, double load) except *:
        """The factor of a GPU's workers under a Python ``InterferenceModel``."""
        cdef int j, rank
        models = []
        if self.interference_models:
            for j in range(self.gpus.gpu_jobs_n[g]):
                rank = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
                if self.jobs.row[rank].status == RUNNING:
                    models.append(self.specs[rank].model)
        return self.interference_py.factor(load, k, models)

    # ---------------------------------------------------- measured pairs (per worker)
    cdef double _measured_factor(
        self, int rank, int g, int* others, int n, double load, int k
    ) noexcept:
        """Fraction of solo speed of job ``rank`` on GPU ``g`` computing beside the ``n``
        jobs ``others`` (``load`` and ``k``: the GPU's total intensity and workers):
        ``1 / (1 + sum of the pairs' extra times)``, an unmeasured pair's extra time from
        the analytic pair, and the analytic factor where no pair is measured."""
        cdef Job* a = &self.jobs.row[rank]
        cdef Job* b
        cdef int i, t = self.gpus.gpu_table[g], m = self.enc.num_models
        cdef double extra = 0.0, e
        cdef bint any_measured = False
        if n == 0:
            return 1.0
        for i in range(n):
            b = &self.jobs.row[others[i]]
            e = -1.0
            if a.model >= 0 and b.model >= 0:
                e = self.pair_extra[(t * m + a.model) * m + b.model]
            if e < 0.0:
                e = 1.0 / contention_factor(a.intensity + b.intensity, 2, self.alpha) - 1.0
            else:
                any_measured = True
            extra += e
        if not any_measured:
            return contention_factor(load, k, self.alpha)
        return 1.0 / (1.0 + extra)

    cdef inline double _model_speed(self, Job* job, int g) noexcept:
        """A job's solo speed on GPU ``g`` relative to a V100 (measured per model)."""
        if job.model >= 0:
            return self.gpus.gpu_model_speed[g * self.enc.num_models + job.model]
        return self.gpus.gpu_speed[g]

    cdef int _colocated_with(self, int rank, int g, bint resuming) noexcept:
        """Fill ``colocated`` with the jobs computing on ``g`` other than ``rank`` (with
        ``resuming``: restarting ones too); return how many."""
        cdef int j, other, status, n = 0
        for j in range(self.gpus.gpu_jobs_n[g]):
            other = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
            status = self.jobs.row[other].status
            if other != rank and (status == RUNNING or (resuming and status == RESUMING)):
                self.jobs.colocated[n] = other
                n += 1
        return n

    cdef double _worker_speed(self, int rank, int g) noexcept:
        """Speed (x V100 solo) of computing job ``rank``'s worker on GPU ``g``."""
        cdef int n = self._colocated_with(rank, g, False)
        cdef double f = self._measured_factor(
            rank, g, self.jobs.colocated, n, self.gpus.load[g], self.gpus.computing[g]
        )
        return f * self._model_speed(&self.jobs.row[rank], g)

    cdef double _slowest_measured(self, int g) noexcept:
        """The smallest factor among the workers computing on ``g`` (``GPUState.factor``)."""
        cdef int j, rank, n
        cdef double f, slowest = 1.0
        for j in range(self.gpus.gpu_jobs_n[g]):
            rank = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
            if self.jobs.row[rank].status != RUNNING:
                continue
            n = self._colocated_with(rank, g, False)
            f = self._measured_factor(rank, g, self.jobs.colocated, n, self.gpus.load[g], self.gpus.computing[g])
            if f < slowest:
                slowest = f
        return slowest

    def measured_speed_if_placed(self, job_id, gpus, bint include_resuming):
        """``SimView.speed_if_placed`` under measured pairs: (the job's own speed x V100
        solo, the slowest co-located job's factor) if it joined ``gpus``."""
        cdef int rank = self.rank_of[job_id], n, i, j, k, member, kept
        cdef Job* job = &self.jobs.row[rank]
        cdef double own = 1.0, others = 1.0, load, f  # as the analytic path: own <= 1
        cdef int* members = self.jobs.touched_jobs
        for g in gpus:
            n = self._colocated_with(rank, g, include_resuming)
            load = job.intensity
            for i in range(n):
                members[i] = self.jobs.colocated[i]
                load += self.jobs.row[members[i]].intensity
            members[n] = rank
            k = n + 1
            f = self._measured_factor(rank, g, members, n, load, k) * self._model_speed(job, g)
            if f < own:
                own = f
            for i in range(n):
                member = members[i]
                kept = 0
                for j in range(n + 1):
                    if members[j] != member:
                        self.jobs.colocated[kept] = members[j]
                        kept += 1
                f = self._measured_factor(member, g, self.jobs.colocated, kept, load, k)
                if f < others:
                    others = f
        return own, others

    cdef void _update_rate(self, int rank, bint force) except *:
        cdef Job* job = &self.jobs.row[rank]
        cdef int* gpus = &self.jobs.gpus_of[job.offset]
        cdef int i, g
        cdef double slowest, value, rate, remaining, finish_in
        g = gpus[0] if job.held else -1
        if g < 0:  # a job without GPUs: its solo speed (its node's CPU is its own)
            slowest = 1.0
        elif self.measured:
            slowest = self._worker_speed(rank, g)
            for i in range(1, job.held):
                value = self._worker_speed(rank, gpus[i])
                if value < slowest:
                    slowest = value
        else:
            slowest = self.gpus.factor[g] * self.gpus.gpu_speed[g] * self.jobs.workers[job.offset].speed
            for i in range(1, job.held):
                g = gpus[i]
                value = self.gpus.factor[g] * self.gpus.gpu_speed[g] * self.jobs.workers[job.offset + i].speed
                if value < slowest:
                    slowest = value
        if job.cross_node:
            slowest *= job.cross_factor
        rate = slowest / job.step_time
        if not force and rate == job.rate:
            return
        self._fold(job)
        job.rate = rate
        job.speed = slowest
        job.version += 1
        remaining = job.iterations - job.progress
        finish_in = 0.0 if remaining <= 1e-9 * job.iterations else remaining / rate
        self._push(self.now + finish_in, EV_FINISH, rank)
        if not job.sampled:
            if job.progress >= self.sample_iterations:
                job.sampled = True
            elif self.sample_iterations < job.iterations:
                self._push(
                    self.now + (self.sample_iterations - job.progress) / rate, EV_SAMPLED, rank
                )

    cdef void _start_compute(self, int rank) except *:
        cdef Job* job = &self.jobs.row[rank]
        cdef int* gpus = &self.jobs.gpus_of[job.offset]
        cdef int i, g
        job.status = RUNNING
        job.service_since = self.now
        self.jobs.running[self.jobs.running_n] = rank
        self.jobs.running_n += 1
        for i in range(job.held):
            g = gpus[i]
            self.gpus.load[g] = self.gpus.load[g] + self.jobs.workers[job.offset + i].load
            self.gpus.computing[g] += 1
        job.last_update = self.now
        job.rate = 0.0
        self._touch_compute(gpus, job.held, rank)

    cdef void _stop_compute(self, int rank, int status) noexcept:
        cdef Job* job = &self.jobs.row[rank]
        cdef int* gpus = &self.jobs.gpus_of[job.offset]
        cdef int i, g
        cdef long left
        self._fold(job)
        job.status = status
        job.rate = 0.0
        job.speed = 0.0
        job.version += 1
        for i in range(self.jobs.running_n):
            if self.jobs.running[i] == rank:
                memmove(
                    &self.jobs.running[i], &self.jobs.running[i + 1], (self.jobs.running_n - i - 1) * sizeof(int)
                )
                self.jobs.running_n -= 1
                break
        for i in range(job.held):
            g = gpus[i]
            left = self.gpus.computing[g] - 1
            self.gpus.computing[g] = left
            self.gpus.load[g] = self.gpus.load[g] - self.jobs.workers[job.offset + i].load if left > 0 else 0.0

    cdef void _release(self, int rank) noexcept:
        cdef Job* job = &self.jobs.row[rank]
        cdef int* gpus = &self.jobs.gpus_of[job.offset]
        cdef int i, j, g, n
        cdef long held
        cdef int* row
        job.gpu_seconds += (self.now - job.held_since) * job.num_gpus
        self._hold_node(job.node, job, -1)
        job.prev_node = job.node
        job.node = -1
        for i in range(job.held):
            g = gpus[i]
            held = self.gpus.holders[g] - 1
            self.gpus.holders[g] = held
            self._holders_changed(g, held + 1)
            if held == 0:
                self.gpus.free_cap[g] = self.gpus.capacity[g]
            else:
                self.gpus.free_cap[g] = self.gpus.free_cap[g] + self.jobs.workers[job.offset + i].take
            row = &self.gpus.gpu_jobs[g * self.gpus.max_jobs]
            n = self.gpus.gpu_jobs_n[g]
            for j in range(n):
                if row[j] == rank:
                    memmove(&row[j], &row[j + 1], (n - j - 1) * sizeof(int))
                    break
            self.gpus.gpu_jobs_n[g] = n - 1
        memcpy(&self.jobs.prev_of[job.offset], gpus, job.held * sizeof(int))
        job.prev_held = job.held
        job.held = 0

    cdef void _finish(self, int rank) except *:
        cdef Job* job = &self.jobs.row[rank]
        job.progress = job.iterations
        job.rate = 0.0
        self._stop_compute(rank, FINISHED)
        self._release(rank)
        self._touch_memory(&self.jobs.prev_of[job.offset], job.prev_held)
        self._touch_compute(&self.jobs.prev_of[job.offset], job.prev_held, -1)
        job.finish = self.now
        self.in_system -= 1
        self.jobs.finished[self.jobs.finished_n] = rank
        self.jobs.finished_n += 1

    cdef void _occupy(self, int rank, int node, int* chosen, int count) except *:
        """Carry out a checked placement: ``chosen`` sorted, distinct, with room, the
        first on ``node`` (a job without GPUs: ``node`` alone)."""
        cdef Job* job = &self.jobs.row[rank]
        cdef int* gpus = &self.jobs.gpus_of[job.offset]
        cdef int i, g
        cdef double wait
        self._dequeue(rank)
        memcpy(gpus, chosen, count * sizeof(int))
        job.held = count
        job.node = node
        job.held_since = self.now
        job.cross_node = False
        if count > 1:
            for i in range(1, count):
                if self.gpus.gpu_node[gpus[i]] != node:
                    job.cross_node = True
                    break
        wait = self._hold_node(node, job, 1)
        for i in range(count):
            g = gpus[i]
            self.gpus.free_cap[g] = self.gpus.free_cap[g] - self.jobs.workers[job.offset + i].take
            self.gpus.holders[g] += 1
            self._holders_changed(g, self.gpus.holders[g] - 1)
            self.gpus.gpu_jobs[g * self.gpus.max_jobs + self.gpus.gpu_jobs_n[g]] = rank
            self.gpus.gpu_jobs_n[g] += 1
        self._touch_memory(gpus, count)
        if job.status == PENDING and wait <= 0.0:
            job.first_start = self.now
            self._start_compute(rank)
        else:  # SUSPENDED: restart first (MIG: once its instances exist), holding the GPUs
            if job.status == PENDING:  # MIG: its instances are still being created
                job.first_start = self.now
            else:
                wait += job.resume_overhead
            job.status = RESUMING
            job.transition_since = self.now
            self._transit_add(rank)
            job.version += 1
            self._push(self.now + wait, EV_RESUME_DONE, rank)
        self.sim_decisions += 1
        self._record()

    cdef void _suspend(self, int rank) except *:
        cdef Job* job = &self.jobs.row[rank]
        self._stop_compute(rank, SUSPENDING)
        self._touch_compute(&self.jobs.gpus_of[job.offset], job.held, -1)
        job.transition_since = self.now
        self._transit_add(rank)
        self._push(self.now + job.suspend_overhead, EV_SUSPEND_DONE, rank)
        self.sim_decisions += 1
        self._record()

    cdef inline void _transit_add(self, int rank) noexcept:
        self.jobs.transit[self.jobs.transit_n] = rank
        self.jobs.transit_n += 1

    cdef void _transit_remove(self, int rank) noexcept:
        cdef int i
        for i in range(self.jobs.transit_n):
            if self.jobs.transit[i] == rank:
                memmove(
                    &self.jobs.transit[i], &self.jobs.transit[i + 1], (self.jobs.transit_n - i - 1) * sizeof(int)
                )
                self.jobs.transit_n -= 1
                return

    cdef void _add_event(self, int kind, int rank) except *:
        if self.events_n == self.events_cap:
            self.events_cap *= 2
            self.events_kind = <int*>realloc(self.events_kind, self.events_cap * sizeof(int))
            self.events_job = <int*>realloc(self.events_job, self.events_cap * sizeof(int))
            if self.events_kind == NULL or self.events_job == NULL:
                raise MemoryError()
        self.events_kind[self.events_n] = kind
        self.events_job[self.events_n] = rank
        self.events_n += 1

    cdef void _handle(self, int kind, int rank) except *:
        cdef Job* job = &self.jobs.row[rank]
        cdef int i
        cdef bint moved
        if kind == EV_FINISH:
            self._finish(rank)
        elif kind == EV_SAMPLED:
            self._fold(job)
            job.sampled = True
        elif kind == EV_SUSPEND_DONE:
            self._transit_remove(rank)
            job.overhead_gpu_seconds += (self.now - job.transition_since) * job.num_gpus
            job.suspends += 1
            self._release(rank)
            self._touch_memory(&self.jobs.prev_of[job.offset], job.prev_held)
            job.status = SUSPENDED
            self._enqueue(rank)
        elif kind == EV_RESUME_DONE:
            self._transit_remove(rank)
            job.overhead_gpu_seconds += (self.now - job.transition_since) * job.num_gpus
            if job.suspends > 0:  # else a first start that waited for its MIG instances
                job.resumes += 1
            if job.prev_node >= 0:
                moved = job.prev_node != job.node or job.prev_held != job.held
                if not moved:
                    for i in range(job.held):
                        if self.jobs.prev_of[job.offset + i] != self.jobs.gpus_of[job.offset + i]:
                            moved = True
                            break
                if moved:
                    job.migrations += 1
            self._start_compute(rank)
        self._add_event(kind, rank)

    cdef double _next_event_time(self) noexcept:
        """Time of the next event, or +inf when nothing is left to happen."""
        cdef double t = INFINITY
        self._drop_stale()
        if self.events.n:
            t = self.events.heap[0].time
        if self.jobs.next_arrival < self.jobs.num_jobs and self.jobs.row[self.jobs.next_arrival].arrival < t:
            t = self.jobs.row[self.jobs.next_arrival].arrival
        return t

    cdef void _sim_advance(self) except *:
        cdef double t = self._next_event_time()
        cdef Entry top
        cdef Job* job
        if t == INFINITY:
            raise RuntimeError(
                f"advance(): no event left and {self.jobs.queue_n} job(s) waiting"
            )
        self.now = t
        self.events_n = 0
        while True:
            self._drop_stale()
            if self.events.n and self.events.heap[0].time <= t:
                top = self.events.heap[0]
                self._pop()
                self._handle(top.kind, top.job)
            elif self.jobs.next_arrival < self.jobs.num_jobs and self.jobs.row[self.jobs.next_arrival].arrival <= t:
                job = &self.jobs.row[self.jobs.next_arrival]
                job.status = PENDING
                self.in_system += 1
                self._enqueue(self.jobs.next_arrival)
                self._add_event(EV_ARRIVAL, self.jobs.next_arrival)
                self.jobs.next_arrival += 1
            else:
                break
        self.events_processed += self.events_n
        self._record()
