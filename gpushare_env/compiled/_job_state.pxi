# The job proxy (included by _core.pyx last): ``JobState``, the one Python view of a
# job's C record (``Simulator.jobs``, ``SimView.job``).


cdef class JobState:
    """One job as the simulator holds it and as a scheduler may know it: the one view of
    a job (``Simulator.jobs``, ``SimView.job``). Read-only.

    A proxy over the core's C record: every attribute reads the current value. What a
    scheduler may not know (the true length) is in ``spec``; heuristics that honour
    ``duration_info`` read ``predicted_remaining_s`` instead.
    """

    cdef Core core
    cdef int rank

    def __repr__(self):
        return f"JobState(job_id={self.job_id}, status={self.status.name})"

    def __eq__(self, other):
        if not isinstance(other, JobState):
            return NotImplemented
        return (<JobState>other).core is self.core and (<JobState>other).rank == self.rank

    def __hash__(self):
        return hash((id(self.core), self.rank))

    @property
    def spec(self):
        """The immutable job description (a belief's: ``Core.spec_of``)."""
        if self.core.spec_factor is not None:
            return self.core.spec_of(self.rank)
        return self.core.specs[self.rank]

    @property
    def job_id(self):
        return self.core.jobs.row[self.rank].job_id

    @property
    def noise(self):
        """Relative measurement error of the sampled step time."""
        return self.core.jobs.row[self.rank].noise

    @property
    def suspend_overhead_s(self):
        return self.core.jobs.row[self.rank].suspend_overhead

    @property
    def resume_overhead_s(self):
        return self.core.jobs.row[self.rank].resume_overhead

    @property
    def cross_node_factor(self):
        return self.core.jobs.row[self.rank].cross_factor

    @property
    def status(self):
        """Current status (a ``JobStatus``)."""
        return _STATUSES[self.core.jobs.row[self.rank].status]

    @property
    def num_gpus(self):
        """Workers (GPUs) the job needs."""
        return self.core.jobs.row[self.rank].num_gpus

    @property
    def memory_gib(self):
        """Memory of each worker, as the fit rule counts it (under the shares model: its
        requested share of a GPU, in milli-GPU, as ``free_memory_gib``).  # [GiB]"""
        return self.core.jobs.row[self.rank].demand

    @property
    def intensity(self):
        """Compute fraction one worker uses alone (under the shares model: its share)."""
        return self.core.jobs.row[self.rank].intensity

    @property
    def node_request(self):
        """``(cpu_milli, host_memory_mib, model_mask)`` the job asks of its node under the
        shares model (``(0.0, 0.0, -1)`` under the memory model): with ``num_gpus`` and
        ``memory_gib``, jobs alike in these fit exactly the same placements."""
        cdef Job* job = &self.core.jobs.row[self.rank]
        return (job.cpu, job.host_mem, job.model_mask)

    @property
    def model(self):
        """Model name."""
        return self.core.specs[self.rank].model

    @property
    def arrival_s(self):
        """Submission time.  # [s]"""
        return self.core.jobs.row[self.rank].arrival

    @property
    def suspended(self):
        """True when the job waits after a suspension (resuming costs an overhead)."""
        return self.core.jobs.row[self.rank].status == SUSPENDED

    @property
    def progress(self):
        """Fraction of iterations done as of now, in [0, 1]."""
        cdef Job* job = &self.core.jobs.row[self.rank]
        return self.core._done(job) / job.iterations

    @property
    def iterations_done(self):
        """Iterations done as of ``last_update_s`` (the record's own counter)."""
        return self.core.jobs.row[self.rank].progress

    @property
    def predicted_remaining_s(self):
        """Remaining solo time as schedulers may know it (``duration_info``), ``None``
        when unknown.  # [s]"""
        cdef bint known
        cdef double value = self.core._predicted_remaining(&self.core.jobs.row[self.rank], &known)
        return value if known else None

    @property
    def wait_s(self):
        """Time waiting since the job last entered the queue (0 when holding GPUs).  # [s]"""
        cdef Job* job = &self.core.jobs.row[self.rank]
        if job.status == PENDING or job.status == SUSPENDED:
            return self.core.now - job.queued_since
        return 0.0

    @property
    def total_wait_s(self):
        """All time spent waiting without GPUs so far.  # [s]"""
        return self.core.jobs.row[self.rank].queued_s + self.wait_s

    @property
    def attained_gpu_s(self):
        """GPU-time held so far, overheads included (Tiresias's attained service).  # [GPU s]"""
        cdef Job* job = &self.core.jobs.row[self.rank]
        cdef double held = job.gpu_seconds
        if job.held:
            held += (self.core.now - job.held_since) * job.num_gpus
        return held

    @property
    def last_update_s(self):
        return self.core.jobs.row[self.rank].last_update

    @property
    def rate(self):
        """Iterations per second now."""
        return self.core.jobs.row[self.rank].rate

    @property
    def speed(self):
        """Current speed as a fraction of solo exclusive speed (0 when not running)."""
        cdef Job* job = &self.core.jobs.row[self.rank]
        return job.speed if job.status == RUNNING else 0.0

    @property
    def gpus(self):
        """GPUs held now, sorted (empty when it holds none)."""
        cdef Job* job = &self.core.jobs.row[self.rank]
        cdef int i
        return tuple([self.core.jobs.gpus_of[job.offset + i] for i in range(job.held)])

    @property
    def node(self):
        """The node it holds its place on (its first GPU's; a job without GPUs: its CPU
        and host memory's), or -1 while it holds nothing."""
        return self.core.jobs.row[self.rank].node

    @property
    def prev_gpus(self):
        """GPUs it held before its last release."""
        cdef Job* job = &self.core.jobs.row[self.rank]
        cdef int i
        return tuple([self.core.jobs.prev_of[job.offset + i] for i in range(job.prev_held)])

    @property
    def version(self):
        return self.core.jobs.row[self.rank].version

    @property
    def first_start_s(self):
        return self.core.jobs.row[self.rank].first_start

    @property
    def finish_s(self):
        return self.core.jobs.row[self.rank].finish

    @property
    def held_since_s(self):
        return self.core.jobs.row[self.rank].held_since

    @property
    def gpu_seconds(self):
        return self.core.jobs.row[self.rank].gpu_seconds

    @property
    def overhead_gpu_seconds(self):
        return self.core.jobs.row[self.rank].overhead_gpu_seconds

    @property
    def transition_since_s(self):
        return self.core.jobs.row[self.rank].transition_since

    @property
    def queued_since_s(self):
        return self.core.jobs.row[self.rank].queued_since

    @property
    def queued_s(self):
        return self.core.jobs.row[self.rank].queued_s

    @property
    def suspends(self):
        return self.core.jobs.row[self.rank].suspends

    @property
    def resumes(self):
        return self.core.jobs.row[self.rank].resumes

    @property
    def migrations(self):
        return self.core.jobs.row[self.rank].migrations

    @property
    def sampled(self):
        return bool(self.core.jobs.row[self.rank].sampled)

    @property
    def cross_node(self):
        return bool(self.core.jobs.row[self.rank].cross_node)


cdef JobState _job_state(Core core, int rank):
    cdef JobState state = JobState.__new__(JobState)
    state.core = core
    state.rank = rank
    return state
