# The compiled core, part 6 of 7 (included by _core.pyx after _summary.pxi): copies of
# an episode's state - exact forks, belief forks that cannot see the future, and pickling
# (a core is rebuilt from its inputs and replays its operations).


cdef class _Forks(_Encoder):
    # ------------------------------------------------------------------ forks
    def fork(self):
        """A new core at the same instant of the same episode, independent of this one:
        each part copies its own memory (the event heap, the job and GPU tables, the
        windows, the meter and timeline, the encoder's buffer and mask, FGD's caches);
        what never changes after construction (the inputs, the specs, the column layout,
        a Python interference model) is shared. The same calls on both give the same
        results bit for bit. ``GPUState`` over the new live arrays is the caller's
        (``gpushare_env.sim.engine.fork_core``)."""
        cdef Core c = Core.__new__(Core)
        c.gpus = self.gpus.copy()
        c.jobs = self.jobs.copy()
        c.events = self.events.copy()
        c.win = self.win.copy()
        c.meter = self.meter.copy()
        c.enc = self.enc.copy(self.gpus.num_gpus, self.cols.num_frag)
        c.cols = self.cols  # the layout: read-only after construction
        c.rules = self.rules.copy()
        c.specs = self.specs
        c.rank_of = self.rank_of
        c.alpha = self.alpha
        c.interference = self.interference
        c.interference_py = self.interference_py
        c.interference_models = self.interference_models
        c.measured = self.measured
        c.pair_extra = <double*>duplicate(self.pair_extra, self.pair_extra_n * sizeof(double))
        c.pair_extra_n = self.pair_extra_n
        c.sim_decisions = self.sim_decisions
        c.inputs = self.inputs
        c.ops = list(self.ops)
        c.sample_iterations = self.sample_iterations
        c.duration_info = self.duration_info
        c.max_suspends = self.max_suspends
        c.min_service = self.min_service
        c.now = self.now
        c.in_system = self.in_system
        c.events_processed = self.events_processed
        free(c.events_kind)
        free(c.events_job)
        c.events_kind = <int*>duplicate(self.events_kind, self.events_cap * sizeof(int))
        c.events_job = <int*>duplicate(self.events_job, self.events_cap * sizeof(int))
        c.events_n = self.events_n
        c.events_cap = self.events_cap
        memcpy(c.weights, self.weights, NUM_TERMS * sizeof(double))
        memcpy(c.terms, self.terms, NUM_TERMS * sizeof(double))
        c.inv_scale = self.inv_scale
        c.queued_since_sum = self.queued_since_sum
        c.inv_solo_sum = self.inv_solo_sum
        c.transition_gpus = self.transition_gpus
        c.arrived = self.arrived
        c.deadlock = self.deadlock
        c.auto_advance = self.auto_advance
        c.has_time_cap = self.has_time_cap
        c.max_time = self.max_time
        c.decisions = self.decisions
        c.truncated_by = self.truncated_by
        c.decision_cap = self.decision_cap
        c.invalid_penalty = self.invalid_penalty
        c.belief = self.belief
        c.spec_factor = None if self.spec_factor is None else dict(self.spec_factor)
        return c

    def belief_prior(self, double default_s):
        """The solo duration a belief assumes for a job whose length is not known: the
        median over the arrived jobs of the known ones (a finished job's, a sampled
        job's prediction), ``default_s`` when none is known.  [s]"""
        cdef int rank
        cdef Job* job
        cdef bint known
        seen = []
        for rank in range(self.jobs.next_arrival):
            job = &self.jobs.row[rank]
            if job.status == FINISHED:
                seen.append(job.iterations * job.step_time)
            elif self.duration_info != INFO_NONE:
                self._measured_step(job, &known)
                if known:
                    seen.append(job.iterations * self._measured_step(job, &known))
        return float(np.median(seen)) if seen else default_s

    def outcome(self, int since, int arrived, double at):
        """What a rollout scores (``baselines.lookahead``), over the first ``arrived``
        jobs to arrive: ``(finished, finish_sum_s, finish_max_s, unfinished,
        remaining_sum_s, arrival_sum_s)``: those finished after the first ``since`` to
        finish, the sum and largest of their finish times, those not finished, the sum of
        their remaining solo times at time ``at`` (now or later, before the next event) at the
        step times this core holds (a belief's own under ``believe``), and the sum of the
        arrival times of the jobs of both kinds."""
        cdef int i, rank, done_n = 0, left_n = 0
        cdef double total = 0.0, latest = -INFINITY, remaining = 0.0, done, arrivals = 0.0
        cdef Job* job
        arrived = min(arrived, self.jobs.next_arrival)
        for i in range(since, self.jobs.finished_n):
            if self.jobs.finished[i] >= arrived:
                continue
            job = &self.jobs.row[self.jobs.finished[i]]
            total += job.finish
            arrivals += job.arrival
            if job.finish > latest:
                latest = job.finish
            done_n += 1
        for rank in range(arrived):
            job = &self.jobs.row[rank]
            if job.status != FINISHED:
                done = job.progress + job.rate * (at - job.last_update)
                if done > job.iterations:
                    done = job.iterations
                remaining += (job.iterations - done) * job.step_time
                arrivals += job.arrival
                left_n += 1
        return done_n, total, latest, left_n, remaining, arrivals

    def believe(self, double prior_s):
        """Make this core (a fresh fork) what a scheduler knows now under its
        ``duration_info``: the jobs that have arrived and no others, and each unfinished
        job's step time as the scheduler sees it (the truth under ``oracle``, the
        sampled, noisy step time once sampled, else the step time that makes its solo
        duration ``prior_s``), with no sampling noise left. Running jobs' rates and
        events follow, and ``spec_of`` gives each job's spec at its believed step time."""
        cdef int rank, n = self.jobs.next_arrival
        cdef Job* job
        cdef double believed, before
        self.spec_factor = {}
        self.belief = True
        self.jobs.num_jobs = n
        self.enc.inv_jobs = 1.0 / (n if n > 0 else 1)
        for rank in range(n):
            job = &self.jobs.row[rank]
            if job.status == FINISHED:
                job.noise = 0.0
                continue
            if self.duration_info == INFO_ORACLE:
                believed = job.step_time
            elif self.duration_info == INFO_SAMPLED and job.sampled:
                believed = job.step_time * (1.0 + job.noise)
            else:
                believed = prior_s / job.iterations
            job.noise = 0.0
            if believed == job.step_time:
                continue
            self.spec_factor[rank] = believed / job.step_time
            job.step_time = believed
            before = self.jobs.inv_solo[rank]
            self.jobs.inv_solo[rank] = 1.0 / (job.iterations * believed)
            self.inv_solo_sum += self.jobs.inv_solo[rank] - before
            if job.status == RUNNING:
                self._update_rate(rank, True)

    def spec_of(self, int rank):
        """The ``JobSpec`` of the job of ``rank``; in a belief, with the step time the
        belief holds (made on first use)."""
        spec = self.specs[rank]
        if self.spec_factor is not None:
            factor = self.spec_factor.get(rank)
            if factor is not None:
                if type(factor) is not float:
                    return factor  # made before
                spec = _replace(spec, iter_time_s=spec.iter_time_s * factor)
                self.spec_factor[rank] = spec
        return spec

    # ------------------------------------------------------------- pickling
    def __reduce__(self):
        if self.belief:
            raise TypeError(
                "a belief fork cannot be pickled: it is not a replay of its episode "
                "(pickle the simulator it was forked from)"
            )
        # A core is rebuilt from its inputs and replays its operations: the episode is
        # deterministic, so the copy is the same state bit for bit.
        from gpushare_env.sim.engine import rebuild_core

        return rebuild_core, (self.inputs, list(self.ops))

    def replay(self, ops):
        """Carry out ``ops`` (what ``ops`` recorded of another core) on this fresh core."""
        for op in ops:
            if op is None:
                self.start()
            elif type(op) is int:
                self.step(max(op, 0), op < 0)
            elif op == "advance":
                self.advance()
            elif op == "settle":
                self.settle()
            elif op[0] == "settle_until":
                self.settle_until(op[1])
            elif op[0] == "place":
                self.place(op[1], op[2])
            elif op[0] == "schedule":
                self.schedule(op[1], op[2])
            elif op[0] == "repartition":
                self.repartition(op[1], op[2])
            else:
                self.suspend(op[1])
