# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The simulator's engine: one episode in C, with the env's encoder and reward terms.

This is the only implementation of the simulation rules (events, rates, memory, the
placement strategies, suspend / resume, sampling and prediction) and of the observation,
mask and reward encoding, and it answers the rule queries policies ask (the windows, fit,
speed if placed, predicted work, the action codec); ``gpushare_env.sim.engine.Simulator``
is its Python face, which policies read as a ``SimView`` (``docs/design/engine.md``).
Jobs are C structs indexed by their
rank in arrival order; the event heap, the queue, the running and in-transition lists are
C arrays; an env step is one call (``step``), a headless decision one call too (``place``,
``schedule``, ``suspend``, ``advance``).

The per-GPU arrays (``free``, ``load``, ``computing``, ``holders``, ``factor``) are numpy
arrays the core writes through raw pointers: the simulator hands them to policies
read-only (every placement strategy runs here, in C; Python reads the arrays only
through the view and, for a Python interference model, its calls). The observation's column
indices are looked up by name in the layout the env passes in (the feature registry,
``gpushare_env.envs.features``).
"""

cimport cython
from libc.math cimport INFINITY, exp, log2, log10, pow
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memset, memmove, memcpy

import numpy as np
cimport numpy as cnp

from dataclasses import replace as _replace

from gpushare_env.sim.types import Event, EventKind, InvalidDecision, JobStatus

cnp.import_array()

cdef enum:
    # job status (gpushare_env.sim.types.JobStatus)
    FUTURE = 0
    PENDING = 1
    RUNNING = 2
    SUSPENDING = 3
    SUSPENDED = 4
    RESUMING = 5
    FINISHED = 6
    # event kinds (gpushare_env.sim.engine.EventKind): the value is the tie-break priority
    EV_FINISH = 0
    EV_SUSPEND_DONE = 1
    EV_RESUME_DONE = 2
    EV_SAMPLED = 3
    EV_ARRIVAL = 4
    # duration_info
    INFO_NONE = 0
    INFO_SAMPLED = 1
    INFO_ORACLE = 2
    # reward components (gpushare_env.envs.config.REWARD_COMPONENTS)
    T_JCT = 0
    T_MAKESPAN = 1
    T_UTIL = 2
    T_SLOWDOWN = 3
    T_STARVATION = 4
    T_OVERHEAD = 5
    T_INVALID = 6
    T_DELAY = 7
    NUM_TERMS = 8
    # strategies (gpushare_env.sim.placement.ALL_STRATEGIES)
    S_EXCLUSIVE = 0
    S_PACK = 1
    S_SPREAD = 2
    S_MIN_FRAG = 3
    S_SHARE_RANDOM = 4  # FGD's six rules (the shares model only), S_SHARE_RANDOM first
    S_SHARE_DOTPROD = 5
    S_SHARE_CLUSTERING = 6
    S_SHARE_PACKING = 7
    S_SHARE_BESTFIT = 8
    S_SHARE_FGD = 9
    S_MIG_FIT = 10  # MIG's two rules (the mig model only): the smallest idle instance
    S_MIG_LARGEST = 11  # that fits, or the largest idle instance
    NUM_CORE_STRATEGIES = 12  # at most this many schedule actions per pending slot
    MAX_MODELS = 64
    GPU_MILLI = 1000  # a whole GPU under the shares model [milli-GPU]
    # sharing models (gpushare_env.sim.sharing: SharingModel.code): GpuTable.sharing, the
    # one dispatch in fit (_fits_with), occupy and release (_hold_node) and encode
    # (_job_fits)
    SHARING_MEMORY = 0
    SHARING_SHARES = 1
    SHARING_MIG = 2
    MIG_SLOTS = 8  # instances one MIG GPU may hold (its memory slices)
    MIG_MAX_PROFILES = 8

cdef double EPS = 1e-9
cdef double GPU_MILLI_F = 1000.0  # GPU_MILLI as a double

#: Number of reward components the core computes (``len(REWARD_COMPONENTS)``, same order).
REWARD_TERMS = NUM_TERMS

#: The values of the C enums by name, by the Python tuple or enum they must follow; the
#: importers check them (``gpushare_env.sim.engine.check_core_enums``).
C_ENUMS = {
    "JobStatus": {"FUTURE": FUTURE, "PENDING": PENDING, "RUNNING": RUNNING,
                  "SUSPENDING": SUSPENDING, "SUSPENDED": SUSPENDED, "RESUMING": RESUMING,
                  "FINISHED": FINISHED},
    "EventKind": {"FINISH": EV_FINISH, "SUSPEND_DONE": EV_SUSPEND_DONE,
                  "RESUME_DONE": EV_RESUME_DONE, "SAMPLED": EV_SAMPLED,
                  "ARRIVAL": EV_ARRIVAL},
    "STRATEGIES": {"exclusive": S_EXCLUSIVE, "pack": S_PACK, "spread": S_SPREAD,
                   "min_frag": S_MIN_FRAG, "share_random": S_SHARE_RANDOM,
                   "share_dotprod": S_SHARE_DOTPROD, "share_clustering": S_SHARE_CLUSTERING,
                   "share_packing": S_SHARE_PACKING, "share_bestfit": S_SHARE_BESTFIT,
                   "share_fgd": S_SHARE_FGD, "mig_fit": S_MIG_FIT,
                   "mig_largest": S_MIG_LARGEST},
    "REWARD_COMPONENTS": {"jct": T_JCT, "makespan": T_MAKESPAN, "utilisation": T_UTIL,
                          "slowdown": T_SLOWDOWN, "starvation": T_STARVATION,
                          "overhead": T_OVERHEAD, "invalid": T_INVALID, "delay": T_DELAY},
    "SHARING": {"memory": SHARING_MEMORY, "shares": SHARING_SHARES, "mig": SHARING_MIG},
}

# what Core._suspend_rule answers
cdef enum:
    SUSPEND_OK
    SUSPEND_NOT_RUNNING
    SUSPEND_BUDGET
    SUSPEND_QUANTUM
cdef tuple _EVENT_KINDS = tuple(EventKind)
cdef tuple _STATUSES = tuple(JobStatus)
cdef double IDLE_PENALTY = 1e6
cdef double LOG_TIME_DECADES = 7.0
cdef double INV_DECADES = 1.0 / 7.0


cdef struct Job:
    long long job_id  # int64 (JobSpec bounds ids to [0, 2**63 - 1])
    int num_gpus
    double demand  # what one worker holds of a GPU [the sharing model's unit]
    double intensity
    double iterations
    double step_time
    double arrival
    int model  # index into the encoder's model names, -1 for other models
    double noise
    double suspend_overhead
    double resume_overhead
    double cross_factor
    int size_index  # index of its worker demand among the workload's sizes
    int status
    double progress
    double last_update
    double rate
    double speed
    int held  # GPUs held now (0 or num_gpus); they are gpus[offset : offset + held]
    int prev_held  # len(prev_gpus)
    int node  # the node of its placement (of its first GPU), -1 while it holds nothing
    int prev_node  # the node of its previous placement, -1 before any
    int offset  # into Core.gpus_of and Core.prev_of
    long version
    double first_start
    double finish
    double held_since
    double gpu_seconds
    double overhead_gpu_seconds
    double transition_since
    double service_since  # when it last began computing (start or end of a resume)
    double queued_since
    double queued_s
    int suspends
    int resumes
    int migrations
    bint sampled
    bint cross_node
    # what the job holds on its node while placed (0 / any without node limits)
    double cpu  # [milli-cores]
    double host_mem  # [MiB]
    long long model_mask  # bit m: may run on GPU model m (-1: any)


cdef struct Worker:
    # one worker of a job, at its job's offset: what it holds of its GPU's capacity, the
    # compute load it puts on it and its speed factor there (its job's demand, intensity
    # and 1, except under the mig model, where they follow its instance), its MIG slot
    double take
    double load
    double speed
    int inst


cdef struct Entry:
    double time
    int kind
    long seq
    int job  # rank
    long version


cdef inline bint entry_less(Entry* a, Entry* b) noexcept nogil:
    if a.time != b.time:
        return a.time < b.time
    if a.kind != b.kind:
        return a.kind < b.kind
    return a.seq < b.seq


cdef inline double log_time(double seconds) noexcept nogil:
    """``min(1, log10(1 + max(seconds, 0)) / 7)`` as ``observation.log_time``."""
    cdef double value = log10(1.0 + (seconds if seconds > 0.0 else 0.0)) / LOG_TIME_DECADES
    return value if value < 1.0 else 1.0


def time_feature(double seconds):
    """The observation's time feature, ``min(1, log10(1 + max(seconds, 0)) / 7)``: the
    value every ``log_time`` column holds (``gpushare_env.envs.observation.log_time``)."""
    return log_time(seconds)


cdef inline double clip01(double x) noexcept nogil:
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


cdef inline int upper_bound(double* values, int n, double x) noexcept nogil:
    """``bisect.bisect_right(values[:n], x)``."""
    cdef int lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < values[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef double pairwise_sum(double* a, int n) noexcept:
    """The sum of ``a[:n]`` in numpy's order (``np.sum``'s pairwise summation: eight
    accumulators up to 128 elements, halves at multiples of eight beyond), so a gang's
    total does not depend on how the cluster is laid out in memory."""
    cdef double res
    cdef double[8] r
    cdef int i, j, half
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        for j in range(8):
            r[j] = a[j]
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return pairwise_sum(a, half) + pairwise_sum(a + half, n - half)


cdef inline double contention_factor(double load, int count, double alpha) noexcept nogil:
    """``LinearContention``: ``min(1, 1/U) * (1 - alpha) ** (k - 1)`` for ``k`` workers
    computing with total intensity ``U`` on one GPU."""
    cdef double contention = 1.0 if load <= 1.0 else 1.0 / load
    return contention * pow(1.0 - alpha, <double>(count - 1))


def linear_contention(double load, int count, double alpha):
    """``contention_factor`` for Python (``LinearContention.factor`` is this)."""
    return contention_factor(load, count, alpha)


#: What ``truncation_code`` returns, as ``runner.TruncatedBy`` names it (0: not truncated).
TRUNCATION_REASONS = (None, "decisions", "time", "deadlock")


cdef inline int truncation_code(
    long decisions, long decision_cap, bint has_time_cap, double now, double max_time,
    bint deadlock,
) noexcept nogil:
    """Why an episode with jobs left stops here: the first of its decision cap (1), its
    time cap (2) and a deadlock (3) that holds; 0 if none does."""
    if decisions >= decision_cap:
        return 1
    if has_time_cap and now >= max_time:
        return 2
    return 3 if deadlock else 0


def truncation_reason(decisions, decision_cap, double now, max_time_s=None, bint deadlock=False):
    """``truncation_code`` for Python (the headless runner's caps): ``None``,
    ``"decisions"``, ``"time"`` or ``"deadlock"``. ``decision_cap`` / ``max_time_s``
    ``None``: no such cap."""
    cdef long cap = 2**62 if decision_cap is None else decision_cap
    cdef bint timed = max_time_s is not None
    cdef double limit = max_time_s if timed else 0.0
    return TRUNCATION_REASONS[truncation_code(decisions, cap, timed, now, limit, deadlock)]


cdef void* checked_malloc(size_t size) except NULL:
    cdef void* p = malloc(size if size > 0 else 1)
    if p == NULL:
        raise MemoryError()
    memset(p, 0, size if size > 0 else 1)
    return p


cdef void* duplicate(const void* src, size_t size) except? NULL:
    """A new block holding the ``size`` bytes at ``src`` (NULL for NULL): how each part
    copies its own memory for ``Core.fork``."""
    if src == NULL:
        return NULL
    cdef void* p = malloc(size if size > 0 else 1)
    if p == NULL:
        raise MemoryError()
    memcpy(p, src, size)
    return p


# The core by concern, each a class extending the one before (every cdef method call goes
# through the same vtable as in one class: no run-time cost). This file, part 7, adds the
# construction, the env step and the Python API; the job proxy, JobState, follows it.
include "_event_heap.pxi"
include "_parts.pxi"
include "_state.pxi"
include "_events.pxi"
include "_placement.pxi"
include "_simulation.pxi"
include "_encoder.pxi"
include "_summary.pxi"
include "_forks.pxi"
include "_static.pxi"


cdef class Core(_Forks):
    """One episode: jobs, cluster, events, observation buffer, mask and reward terms.

    Built by ``gpushare_env.sim.engine.new_core`` from ``core_inputs``.
    """

    def __init__(self, inputs):
        """Build the episode from ``inputs``, a ``gpushare_env.sim.core_inputs.CoreInputs``
        (``gpushare_env.sim.engine.core_inputs`` makes one; its classes document each
        field)."""
        cdef int i, g, n, k, offset
        cdef Job* job
        from gpushare_env.sim.core_inputs import CoreInputs

        if not isinstance(inputs, CoreInputs):
            raise TypeError(
                f"Core is built from a CoreInputs (gpushare_env.sim.engine.core_inputs "
                f"makes one), got {type(inputs).__name__}"
            )
        self.inputs = inputs
        jobs_in = inputs.jobs
        cluster_in = inputs.cluster
        sim_in = inputs.sim
        encoder_in = inputs.encoder
        env_in = inputs.env
        self.ops = []
        # ---- cluster and jobs
        self.gpus.build(cluster_in, sim_in)
        capacity = self.gpus.free_array.copy()
        speed = np.ascontiguousarray(cluster_in.gpu_speed, dtype=np.float64)
        gpu_node = np.ascontiguousarray(cluster_in.gpu_node, dtype=np.int64)
        g = self.gpus.num_gpus
        self.jobs.build(jobs_in, self.gpus.max_jobs)
        if sim_in.mig is not None:
            self.gpus.mig.build(sim_in.mig, g, self.jobs.num_jobs)
        self.rules.build(jobs_in, sim_in, self.gpus)
        n = self.jobs.num_jobs
        self.specs = list(jobs_in.specs)
        self.rank_of = {job_id: i for i, job_id in enumerate(jobs_in.job_id)}

        # ---- simulator
        self.alpha = sim_in.alpha
        self.interference = sim_in.interference
        self.interference_py = sim_in.interference_model
        self.interference_models = sim_in.interference_models
        measured = sim_in.measured
        self.measured = measured is not None
        if self.measured:
            if measured.num_models != encoder_in.num_models:
                raise ValueError("measured tables: one row per encoder model expected")
            table = measured.pair_extra
            self.pair_extra_n = len(table) + 1
            self.pair_extra = <double*>checked_malloc(self.pair_extra_n * sizeof(double))
            for i in range(len(table)):
                self.pair_extra[i] = table[i]
            table = measured.gpu_table
            self.gpus.gpu_table = <int*>checked_malloc(g * sizeof(int))
            for i in range(g):
                self.gpus.gpu_table[i] = table[i]
            table = measured.gpu_model_speed
            self.gpus.model_speed_n = len(table) + 1
            self.gpus.gpu_model_speed = <double*>checked_malloc(self.gpus.model_speed_n * sizeof(double))
            for i in range(len(table)):
                self.gpus.gpu_model_speed[i] = table[i]
        self.sample_iterations = sim_in.sample_iterations
        self.duration_info = ("none", "sampled", "oracle").index(sim_in.duration_info)
        self.meter.record_timeline = sim_in.record_timeline
        cap = sim_in.max_suspends_per_job
        self.max_suspends = -1 if cap is None else cap
        self.min_service = sim_in.min_service_s
        reference = sim_in.reference_demand  # sorted
        self.meter.num_reference = len(reference)
        self.meter.reference = <double*>checked_malloc(self.meter.num_reference * sizeof(double))
        for i in range(self.meter.num_reference):
            self.meter.reference[i] = reference[i]
        self.meter.median_worker = sim_in.median_demand
        self.meter.num_gpus = g
        self.meter.util_part = <double*>checked_malloc(g * sizeof(double))
        self.meter.alloc_part = <int*>checked_malloc(g * sizeof(int))
        self.meter.free_part = <double*>checked_malloc(g * sizeof(double))
        self.meter.frag_part = <double*>checked_malloc(g * sizeof(double))
        self.meter.fgd_part = <double*>checked_malloc(g * sizeof(double))
        for i in range(g):
            self.meter.free_part[i] = capacity[i]
            # an idle GPU's expected fragment: its memory, times the share of the
            # workload's workers that do not fit it (the rule of _touch_memory)
            k = upper_bound(self.meter.reference, self.meter.num_reference, self.gpus.capacity[i] + EPS)
            self.meter.fgd_part[i] = self.gpus.capacity[i] * (
                1.0 - <double>k / <double>self.meter.num_reference
            )
        self.meter.util_sum = 0.0
        self.meter.allocated = 0
        self.meter.free_sum = float(capacity.sum())
        self.meter.frag_sum = 0.0
        self.meter.fgd_sum = pairwise_sum(self.meter.fgd_part, g)
        self.meter.timeline_cap = 1024
        self.meter.timeline = <double*>checked_malloc(self.meter.timeline_cap * 8 * sizeof(double))
        self.events_cap = 64
        self.events_kind = <int*>checked_malloc(self.events_cap * sizeof(int))
        self.events_job = <int*>checked_malloc(self.events_cap * sizeof(int))
        self.now = 0.0
        self._record()

        # ---- encoder
        self.win.W = encoder_in.pending_window
        self.win.R = encoder_in.running_window
        self.win.set_strategies(encoder_in.strategies, self.rules)
        self.enc.num_models = encoder_in.num_models
        if self.enc.num_models > MAX_MODELS:
            raise ValueError(f"the compiled core handles at most {MAX_MODELS} models")
        self._layout(encoder_in.columns, encoder_in.frag_edges)
        mem_values = encoder_in.demand_sizes
        self.enc.num_mem_values = len(mem_values)
        self.enc.mem_values = <double*>checked_malloc(self.enc.num_mem_values * sizeof(double))
        for i in range(self.enc.num_mem_values):
            self.enc.mem_values[i] = mem_values[i]
        self.enc.fit_counts = <int*>checked_malloc(self.enc.num_mem_values * sizeof(int))
        self.enc.level = <int*>checked_malloc(g * sizeof(int))
        self.enc.category = <int*>checked_malloc(g * sizeof(int))
        self.enc.category_counts = <int*>checked_malloc(self.cols.num_frag * sizeof(int))
        memset(self.enc.category_counts, 0, self.cols.num_frag * sizeof(int))
        self.enc.category_counts[0] = g
        self.enc.idle_gpus = g
        self.enc.dirty = <bint*>checked_malloc(g * sizeof(bint))
        self.enc.dirty_list = <int*>checked_malloc(g * sizeof(int))
        self.win.window_pending = <int*>checked_malloc((self.win.W + 1) * sizeof(int))
        self.win.priority_slots = encoder_in.priority_slots
        if not 0 <= self.win.priority_slots <= self.win.W:
            raise ValueError(f"priority_slots must be in [0, {self.win.W}], got {self.win.priority_slots}")
        self.win.priority_pos = <int*>checked_malloc((self.win.priority_slots + 1) * sizeof(int))
        self.win.priority_key = <double*>checked_malloc((self.win.priority_slots + 1) * sizeof(double))
        self.win.window_running = <int*>checked_malloc((self.win.R + 1) * sizeof(int))
        self.cols.gpu_at = 0
        self.cols.frag_at = g * self.cols.num_gpu_f
        self.cols.pending_at = self.cols.frag_at + self.cols.num_frag
        self.cols.running_at = self.cols.pending_at + self.win.W * self.cols.num_pw
        self.cols.global_at = self.cols.running_at + self.win.R * self.cols.num_r
        self.enc.buffer_array = np.zeros(self.cols.global_at + self.cols.num_global, dtype=np.float32)
        self.enc.buffer = <float*>cnp.PyArray_DATA(self.enc.buffer_array)
        self.enc.num_actions = self.win.W * self.win.S + self.win.R + 1
        self.enc.mask_array = np.zeros(self.enc.num_actions, dtype=bool)
        self.enc.mask = <cnp.npy_bool*>cnp.PyArray_DATA(self.enc.mask_array)
        self.enc.inv_max_speed = 1.0 / float(speed.max())
        self.enc.inv_slots = 1.0 / self.gpus.max_jobs
        self.enc.inv_gpus = 1.0 / g
        self.enc.inv_jobs = 1.0 / n
        self.enc.inv_total_memory = 1.0 / float(capacity.sum())
        self.enc.log_gpus = encoder_in.log_gpus
        if self.enc.has_encoder:
            gpu_rows = self.enc.buffer_array[: self.cols.frag_at].reshape(g, self.cols.num_gpu_f)
            num_nodes = max(self.gpus.num_nodes - 1, 1)
            gpu_rows[:, self.cols.cg_node] = gpu_node / num_nodes
            gpu_rows[:, self.cols.cg_speed] = speed * self.enc.inv_max_speed
            gpu_rows[:, self.cols.cg_capacity] = capacity / self.gpus.max_capacity
            self.enc.buffer[self.cols.frag_at] = 1.0
        for i in range(g):
            self._mark(i)
        self.win.pending_n = 0
        self.win.running_n_window = 0
        k = self.win.num_rivals = max(jobs_in.num_gpus) + 1
        self.win.rival_seen = <long*>checked_malloc(k * sizeof(long))
        self.win.rival_wait = <double*>checked_malloc(k * sizeof(double))
        self.win.rival_left = <double*>checked_malloc(k * sizeof(double))
        shapes = {}
        self.jobs.shape_of = <int*>checked_malloc(self.jobs.num_jobs * sizeof(int))
        for i in range(self.jobs.num_jobs):
            job = &self.jobs.row[i]
            self.jobs.shape_of[i] = shapes.setdefault((job.num_gpus, job.size_index), len(shapes))
        self.enc.num_shapes = len(shapes)
        self.enc.shape_epoch = <long*>checked_malloc(len(shapes) * sizeof(long))
        self.enc.shape_peak = <double*>checked_malloc(2 * len(shapes) * sizeof(double))
        for i in range(len(shapes)):
            self.enc.shape_epoch[i] = -1

        # ---- env
        weights = env_in.weights
        if len(weights) not in (0, NUM_TERMS):
            raise ValueError(
                f"reward weights: expected {NUM_TERMS} (one per reward component) or none, "
                f"got {len(weights)}"
            )
        for i in range(NUM_TERMS):
            self.weights[i] = weights[i] if len(weights) else 0.0
        self.inv_scale = env_in.inv_scale
        self.auto_advance = env_in.auto_advance
        self.has_time_cap = env_in.max_time_s is not None
        self.max_time = env_in.max_time_s if self.has_time_cap else 0.0
        self.decision_cap = env_in.decision_cap
        self.invalid_penalty = env_in.invalid_penalty
        self.decisions = 0
        self.truncated_by = None

    def _layout(self, columns, frag_edges):
        """Column indices from the names of each observation key's columns (``None``: a
        headless core, which encodes nothing)."""
        cdef int i
        self.enc.has_encoder = columns is not None
        edges = list(frag_edges)
        self.enc.num_frag_edges = len(edges)
        self.enc.frag_edges = <double*>checked_malloc(max(len(edges), 1) * sizeof(double))
        for i in range(len(edges)):
            self.enc.frag_edges[i] = edges[i]
        if columns is None:  # headless: a minimal layout, never written
            self.cols.num_gpu_f = self.cols.num_global = 0
            self.cols.num_frag = len(edges) + 3
            self.cols.num_pw = self.cols.num_r = 0
            return
        gpus, pending, running, glob = (
            list(columns["gpus"]), list(columns["pending"]), list(columns["running"]),
            list(columns["global"]),
        )
        self.cols.num_gpu_f, self.cols.num_pw, self.cols.num_r = len(gpus), len(pending), len(running)
        self.cols.num_global = len(glob)
        self.cols.num_frag = len(columns["frag_hist"])
        if self.cols.num_frag != len(edges) + 3:
            raise ValueError("frag_hist: idle, a bin below each edge and one above, no_slot")
        self.cols.cg_free, self.cols.cg_load, self.cols.cg_workers = (
            gpus.index("free_memory"), gpus.index("load"), gpus.index("workers"),
        )
        self.cols.cg_node, self.cols.cg_speed, self.cols.cg_capacity = (
            gpus.index("node"), gpus.index("speed"), gpus.index("capacity"),
        )
        job_columns = (
            "valid", "num_gpus", "memory", "intensity", "wait", "sampled", "duration_known",
            "predicted_remaining", "suspended", "progress",
        )
        # the job columns sit at the same indices in the pending and the running rows
        for name in job_columns:
            if pending.index(name) != running.index(name):
                raise ValueError(f"column {name!r}: pending and running rows disagree")
        (self.cols.cj_valid, self.cols.cj_gpus, self.cols.cj_memory, self.cols.cj_intensity, self.cols.cj_wait,
         self.cols.cj_sampled, self.cols.cj_known, self.cols.cj_predicted, self.cols.cj_suspended,
         self.cols.cj_progress) = [pending.index(name) for name in job_columns]
        models = [name for name in pending if name.startswith("model_")]
        self.cols.cj_model0 = pending.index(models[0])
        if len(models) != self.enc.num_models or pending[self.cols.cj_model0 : self.cols.cj_model0 + len(
            models
        )] != models:
            raise ValueError("the model one-hot columns must be contiguous, one per model")

        def optional(names, name):
            return names.index(name) if name in names else -1

        self.cols.cp_pack = optional(pending, "pack_load")
        if self.cols.cp_pack >= 0 and pending.index("spread_load") != self.cols.cp_pack + 1:
            raise ValueError("spread_load must follow pack_load")
        self.cols.cp_drain = optional(pending, "drain_share")
        self.cols.cr_speed = running.index("speed")
        self.cols.cr_held = optional(running, "held_time")
        self.cols.cr_shares = optional(running, "shares_gpu")
        self.cols.cr_rival = optional(running, "rival_wait")
        if self.cols.cr_rival >= 0 and running.index("rival_remaining") != self.cols.cr_rival + 1:
            raise ValueError("rival_remaining must follow rival_wait")
        self.cols.cr_drain = optional(running, "drain_share")
        (self.cols.cl_time, self.cols.cl_waiting, self.cols.cl_backlog, self.cols.cl_running, self.cols.cl_transition,
         self.cols.cl_in_system, self.cols.cl_finished, self.cols.cl_util, self.cols.cl_alloc, self.cols.cl_free,
         self.cols.cl_frag, self.cols.cl_expected, self.cols.cl_waiting_gpus, self.cols.cl_idle,
         self.cols.cl_advance) = [glob.index(name) for name in (
            "time", "waiting", "backlog", "running", "in_transition", "in_system",
            "finished", "utilisation", "allocation", "free_memory", "fragmentation",
            "expected_fragment", "waiting_gpus", "idle_gpus", "can_advance",
        )]

    # ================================================================ env
    cdef bint _time_capped(self) noexcept:
        return self.has_time_cap and self.now >= self.max_time

    cdef void _advance(self) except *:
        cdef double t0 = self.now, dt, scaled, waits
        cdef int in_system = self.in_system, waiting = self.jobs.queue_n, i, kind, rank
        cdef double compute_in_use = self.meter.util_sum, progress = 0.0
        cdef Job* job
        if self.weights[T_DELAY] != 0.0:  # solo-seconds of work done per second
            for i in range(self.jobs.running_n):
                job = &self.jobs.row[self.jobs.running[i]]
                if job.status == RUNNING:
                    progress += job.speed
        self._sim_advance()
        dt = self.now - t0
        if dt > 0.0:
            scaled = dt * self.inv_scale
            self.terms[T_JCT] -= in_system * scaled
            self.terms[T_DELAY] -= (in_system - progress) * scaled
            if self.arrived:
                self.terms[T_MAKESPAN] -= scaled
            self.terms[T_UTIL] += compute_in_use * self.enc.inv_gpus * scaled
            self.terms[T_SLOWDOWN] -= self.inv_solo_sum * dt
            if waiting:
                waits = waiting * t0 - self.queued_since_sum
                self.terms[T_STARVATION] -= scaled * (waits + 0.5 * waiting * dt) * self.inv_scale
            self.terms[T_OVERHEAD] -= self.transition_gpus * scaled
        for i in range(self.events_n):
            kind = self.events_kind[i]
            rank = self.events_job[i]
            job = &self.jobs.row[rank]
            if kind == EV_ARRIVAL:
                self.arrived = True
                self.inv_solo_sum += self.jobs.inv_solo[rank]
                self.queued_since_sum += job.queued_since
                self.win.waiting_gpus += job.num_gpus
            elif kind == EV_FINISH:
                self.inv_solo_sum -= self.jobs.inv_solo[rank]
                if self.in_system == 0:
                    self.inv_solo_sum = 0.0  # no drift across busy periods
            elif kind == EV_SUSPEND_DONE:
                self.transition_gpus -= job.num_gpus
                self.queued_since_sum += job.queued_since
                self.win.waiting_gpus += job.num_gpus
            elif kind == EV_RESUME_DONE:
                self.transition_gpus -= job.num_gpus

    cdef void _apply(self, int action) except *:
        cdef int slot, strategy, rank, count
        cdef Job* job
        cdef bint resuming
        cdef double queued_since
        if action == self.enc.num_actions - 1:
            self._advance()
            return
        if action < self.win.W * self.win.S:
            slot = action // self.win.S
            strategy = self.win.strategy_code[action % self.win.S]
            rank = self.win.window_pending[slot]
            job = &self.jobs.row[rank]
            resuming = job.status == SUSPENDED
            queued_since = job.queued_since
            count = self._find_placement(rank, strategy, self.gpus.scratch_gpus)
            if count < 0:  # pragma: no cover - the mask is exact (tested)
                raise RuntimeError(f"schedule action {action}: the job does not fit")
            self._take_rule(strategy)
            self._occupy(rank, self.gpus.chosen_node, self.gpus.scratch_gpus, count)
            self.queued_since_sum -= queued_since
            if self.jobs.queue_n == 0:
                self.queued_since_sum = 0.0  # no drift across queue stints
            self.win.waiting_gpus -= job.num_gpus
            if resuming:
                self.transition_gpus += job.num_gpus
            return
        rank = self.win.window_running[action - self.win.W * self.win.S]
        self._suspend(rank)
        self.transition_gpus += self.jobs.row[rank].num_gpus

    cdef void _settle(self) except *:
        # a headless core keeps no mask: it only asks whether there is a choice
        self._scan_choices(self.enc.has_encoder)
        if self.auto_advance:
            while not self.win.has_choice and self.win.can_advance and not self._time_capped():
                self._advance()
                self._scan_choices(self.enc.has_encoder)
        self.deadlock = not (
            self.jobs.finished_n == self.jobs.num_jobs or self.win.has_choice or self.win.can_advance
        )

    # ------------------------------------------------------------ Python API
    def start(self):
        """Settle the first decision point (what ``reset`` does); time before it is free."""
        if not self.enc.has_encoder:
            raise RuntimeError("this core is headless: it has no observation encoder")
        self.ops.append(None)
        self._settle()
        memset(self.terms, 0, sizeof(self.terms))
        self._observe()

    def settle(self):
        """Let time run through the instants without a choice (the env's auto-advance,
        ``_settle``): what a headless run does after each decision so that it is asked
        where the env would ask, and counts the decisions the env counts."""
        self.ops.append("settle")
        self._settle()

    def settle_until(self, double t):
        """``settle``, letting time run only through events at or before ``t`` (a
        rollout's horizon, ``baselines.lookahead``)."""
        self.ops.append(("settle_until", t))
        self._scan_choices(self.enc.has_encoder)
        if self.auto_advance:
            while (
                not self.win.has_choice and self.win.can_advance and self._next_event_time() <= t
            ):
                self._advance()
                self._scan_choices(self.enc.has_encoder)

    @property
    def has_choice(self):
        """Whether a decision other than letting time run is possible now (as of the last
        settle)."""
        return self.win.has_choice

    def step(self, int action, bint invalid):
        """One env step: apply ``action`` (unless ``invalid``), settle, observe.

        Returns:
            ``(reward, terminated, truncated, now, jobs finished, steps)``: what the env's
            step and info need, in one call.
        """
        cdef int i
        cdef double reward = 0.0
        cdef bint terminated, truncated
        cdef int code
        memset(self.terms, 0, sizeof(self.terms))
        self.ops.append(action if not invalid else -1)  # an invalid action is a no-op
        if not invalid:
            self._apply(action)
        else:
            self.terms[T_INVALID] = -self.invalid_penalty
        self.decisions += 1
        if not invalid:
            self._settle()
        terminated = self.jobs.finished_n == self.jobs.num_jobs
        truncated = False
        if not terminated:
            code = truncation_code(
                self.decisions, self.decision_cap, self.has_time_cap, self.now, self.max_time,
                self.deadlock,
            )  # fmt: skip
            if code:
                self.truncated_by = TRUNCATION_REASONS[code]
                truncated = True
        if truncated:  # running out the clock is no way out: charge what is left
            jct_left, makespan_left = self.truncation_cost()
            self.terms[T_JCT] -= jct_left * self.inv_scale
            self.terms[T_DELAY] -= (jct_left - self._work_left()) * self.inv_scale
            self.terms[T_MAKESPAN] -= makespan_left * self.inv_scale
        for i in range(NUM_TERMS):
            if self.weights[i] != 0.0:
                reward += self.weights[i] * self.terms[i]
        self._observe()
        return reward, terminated, truncated, self.now, self.jobs.finished_n, self.decisions

    @property
    def done(self):
        return self.jobs.finished_n == self.jobs.num_jobs

    @property
    def num_finished(self):
        return self.jobs.finished_n

    @property
    def num_arrived(self):
        return self.jobs.next_arrival

    @property
    def num_waiting(self):
        return self.jobs.queue_n

    @property
    def num_running(self):
        return self.jobs.running_n

    def can_suspend(self, job_id):
        """True if the suspension rules allow suspending job ``job_id`` now (running, under
        ``max_suspends_per_job``, past ``min_service_s`` since a resume): what the mask
        encodes for the running window."""
        return self._suspendable(&self.jobs.row[self._rank(job_id)])

    def suspend_refusal(self, job_id):
        """Why job ``job_id`` may not be suspended now (``None``: it may)."""
        cdef Job* job = &self.jobs.row[self._rank(job_id)]
        cdef int rule = self._suspend_rule(job)
        if rule == SUSPEND_NOT_RUNNING:
            return (
                f"job {job_id}: only a running job can be suspended; "
                f"it is {JobStatus(job.status).name}"
            )
        if rule == SUSPEND_BUDGET:
            return (
                f"job {job_id}: already suspended {job.suspends} time(s), the most allowed "
                f"(max_suspends_per_job={self.max_suspends})"
            )
        if rule == SUSPEND_QUANTUM:
            return (
                f"job {job_id}: resumed {self.now - job.service_since:.1f} s ago, less than "
                f"its minimum service (min_service_s={self.min_service:g})"
            )
        return None

    def truncation_cost(self):
        """What the unfinished jobs would still cost if they ran from now one at a time,
        each alone at solo speed, in arrival order (the sequential schedule without
        sharing, plus a restart for each job that holds no GPUs after having run).

        Returns:
            ``(jct_s, makespan_s)``: the sum over unfinished jobs of their time from now
            (or their arrival, if later) to their finish, and the time from now until
            the last finishes.
        """
        cdef int rank
        cdef double t = self.now, start, jct = 0.0
        cdef Job* job
        for rank in range(self.jobs.num_jobs):  # ranks are in arrival order
            job = &self.jobs.row[rank]
            if job.status == FINISHED:
                continue
            start = job.arrival if job.arrival > self.now else self.now
            if start > t:
                t = start
            t += (job.iterations - self._done(job)) * job.step_time
            if job.status == SUSPENDED or job.status == SUSPENDING:
                t += job.resume_overhead
            jct += t - start
        return jct, t - self.now

    cdef double _work_left(self) noexcept:
        """Solo seconds of work the unfinished jobs still have to do."""
        cdef int rank
        cdef double left = 0.0
        cdef Job* job
        for rank in range(self.jobs.num_jobs):
            job = &self.jobs.row[rank]
            if job.status != FINISHED:
                left += (job.iterations - self._done(job)) * job.step_time
        return left

    def is_valid(self, long action):
        """True if ``action`` is in the action space and the mask allows it now."""
        return bool(0 <= action < self.enc.num_actions and self.enc.mask[action])

    def reward_terms(self, names):
        """The reward components of the last step: a dict from ``names`` (the
        ``REWARD_COMPONENTS`` order) to their values."""
        cdef dict out = {}
        cdef int i
        for i in range(NUM_TERMS):
            out[names[i]] = self.terms[i]
        return out

    # ------------------------------------------------------------ action codec
    # The env's action layout, ``W x S`` schedule actions (slot-major, the S strategies in
    # ``EncoderInput.strategies`` order), ``R`` suspend actions, then advance: ``_apply`` carries an
    # index out, ``decode`` and ``encode`` translate it for Python.

    def decode(self, action):
        """``(kind, job_id, strategy)`` of an action index in the current state: kind
        ``"advance"`` (job ``None``), ``"schedule"`` (a pending-window job and the index
        of its strategy) or ``"suspend"`` (a running-window job, strategy ``None``).

        Raises:
            ValueError: the index is outside the action space or addresses an empty slot.
        """
        cdef int slot, width = self.win.W * self.win.S
        if not 0 <= action < self.enc.num_actions:  # a Python int: any size is refused here
            raise ValueError(f"action {action} is outside Discrete({self.enc.num_actions})")
        if action == self.enc.num_actions - 1:
            return "advance", None, None
        if action < width:
            slot = action // self.win.S
            if slot >= self.win.pending_n:
                raise ValueError(
                    f"action {action} schedules pending slot {slot}, but only "
                    f"{self.win.pending_n} job(s) wait in the window"
                )
            return "schedule", self.jobs.row[self.win.window_pending[slot]].job_id, action % self.win.S
        slot = action - width
        if slot >= self.win.running_n_window:
            raise ValueError(
                f"action {action} suspends running slot {slot}, but only "
                f"{self.win.running_n_window} job(s) run in the window"
            )
        return "suspend", self.jobs.row[self.win.window_running[slot]].job_id, None

    def encode(self, kind, job_id=None, int strategy=0):
        """The action index of ``(kind, job_id, strategy)`` (``decode``'s inverse).

        Raises:
            ValueError: the job is not in the pending (schedule) or running (suspend)
                window, or the kind is unknown.
        """
        cdef int slot
        if kind == "advance":
            return self.enc.num_actions - 1
        if kind == "schedule":
            for slot in range(self.win.pending_n):
                if self.jobs.row[self.win.window_pending[slot]].job_id == job_id:
                    return slot * self.win.S + strategy
            raise ValueError(
                f"job {job_id} is not in the pending window ({self.pending_ids()}, "
                f"{self.win.W} slots, {self.win.priority_slots} of them by least attained "
                "service); only those can be scheduled"
            )
        if kind == "suspend":
            for slot in range(self.win.running_n_window):
                if self.jobs.row[self.win.window_running[slot]].job_id == job_id:
                    return self.win.W * self.win.S + slot
            raise ValueError(
                f"job {job_id} is not in the running window (the first {self.win.R} running "
                f"jobs: {self.running_ids()}); only those can be suspended"
            )
        raise ValueError(f"unknown action kind {kind!r}; allowed: advance, schedule, suspend")

    def pending_ids(self):
        """Job ids of the pending window."""
        return [self.jobs.row[self.win.window_pending[i]].job_id for i in range(self.win.pending_n)]

    def running_ids(self):
        """Job ids of the running window."""
        return [self.jobs.row[self.win.window_running[i]].job_id for i in range(self.win.running_n_window)]

    def timeline_rows(self):
        """The timeline as a ``(T, 8)`` float64 array (``Simulator.timeline`` columns)."""
        out = np.empty((self.meter.timeline_n, 8))
        cdef double* dst = <double*>cnp.PyArray_DATA(out)
        memcpy(dst, self.meter.timeline, self.meter.timeline_n * 8 * sizeof(double))
        return out

    def finished_jobs(self):
        """One tuple per finished job, in finishing order: the ``JobRecord`` fields
        ``(job_id, first_start_s, finish_s, gpu_seconds, overhead_gpu_seconds, suspends,
        resumes, migrations, queued_s)``."""
        cdef Job* job
        rows = []
        for i in range(self.jobs.finished_n):
            job = &self.jobs.row[self.jobs.finished[i]]
            rows.append(
                (
                    job.job_id, job.first_start, job.finish, job.gpu_seconds,
                    job.overhead_gpu_seconds, job.suspends, job.resumes, job.migrations,
                    job.queued_s,
                )
            )
        return rows

    # ------------------------------------------------------- simulator API
    # What ``gpushare_env.sim.engine.Simulator`` exposes: decisions by job id, queries,
    # and ``JobState`` proxies over the C records. Invalid decisions raise
    # ``InvalidDecision`` naming the job and the reason.

    cdef int _rank(self, job_id) except -1:
        rank = self.rank_of.get(job_id)
        if rank is None:
            raise InvalidDecision(f"job {job_id}: no such job")
        return rank

    def job(self, job_id):
        """The ``JobState`` proxy of ``job_id`` (``KeyError`` if there is none)."""
        return _job_state(self, self.rank_of[job_id])

    def pending(self, limit=None):
        """Ids of waiting jobs (pending and suspended) by arrival, at most ``limit``."""
        cdef int i, n = self.jobs.queue_n if limit is None else min(self.jobs.queue_n, max(limit, 0))
        return [self.jobs.row[self.jobs.queue[i]].job_id for i in range(n)]

    def pending_window(self, also_waiting=()):
        """Ids of the pending window now, in arrival order (``_select_window``: the
        windows' size and priority share are the core's). ``also_waiting``: ids of jobs
        holding GPUs to count as waiting again, a what-if (the window once they are
        suspended)."""
        cdef int i, n, m = 0
        cdef int* merged
        cdef int* out
        extra = sorted({self._rank(job_id) for job_id in also_waiting})
        if not extra:
            n = self._select_window(self.jobs.queue, self.jobs.queue_n, self.win.window_pending)
            self.win.pending_n = n
            return [self.jobs.row[self.win.window_pending[i]].job_id for i in range(n)]
        merged = <int*>checked_malloc((self.jobs.queue_n + len(extra)) * sizeof(int))
        out = <int*>checked_malloc((self.win.W + 1) * sizeof(int))
        try:
            i = 0
            for rank in extra:  # both lists by rank: merge them
                if self.jobs.row[rank].status in (PENDING, SUSPENDED, FUTURE, FINISHED):
                    raise InvalidDecision(
                        f"job {self.jobs.row[rank].job_id}: not holding GPUs, cannot wait again"
                    )
                while i < self.jobs.queue_n and self.jobs.queue[i] < rank:
                    merged[m] = self.jobs.queue[i]
                    m += 1
                    i += 1
                merged[m] = rank
                m += 1
            while i < self.jobs.queue_n:
                merged[m] = self.jobs.queue[i]
                m += 1
                i += 1
            n = self._select_window(merged, m, out)
            return [self.jobs.row[out[i]].job_id for i in range(n)]
        finally:
            free(merged)
            free(out)

    def running_window(self):
        """Ids of the running window: the first ``R`` running jobs in the order they
        (re)started (what suspend actions address)."""
        return self.running_list(self.win.R)

    def running_list(self, limit=None):
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        cdef int i, n = self.jobs.running_n if limit is None else min(self.jobs.running_n, max(limit, 0))
        return [self.jobs.row[self.jobs.running[i]].job_id for i in range(n)]

    def transition_list(self):
        """Ids of jobs suspending or resuming, in the order they began."""
        cdef int i
        return [self.jobs.row[self.jobs.transit[i]].job_id for i in range(self.jobs.transit_n)]

    def jobs_on_gpu(self, int gpu):
        """Ids of the jobs holding memory on ``gpu``, in the order they came."""
        cdef int i
        if not 0 <= gpu < self.gpus.num_gpus:
            raise IndexError(f"GPU {gpu} does not exist (cluster has {self.gpus.num_gpus})")
        return [
            self.jobs.row[self.gpus.gpu_jobs[gpu * self.gpus.max_jobs + i]].job_id
            for i in range(self.gpus.gpu_jobs_n[gpu])
        ]

    def next_event_time(self):
        """Time of the next event, or ``None`` when nothing is left to happen."""
        cdef double t = self._next_event_time()
        return None if t == INFINITY else t

    def progress_of(self, job_id):
        """Iterations done by ``job_id`` as of now."""
        return self._done(&self.jobs.row[self.rank_of[job_id]])

    def predicted_remaining_s(self, job_id):
        """Remaining solo time as schedulers may know it (``None`` when unknown)."""
        cdef bint known
        cdef double value = self._predicted_remaining(&self.jobs.row[self.rank_of[job_id]], &known)
        return value if known else None

    def measured_step_time_s(self, job_id):
        """Measured solo step time (``None`` before sampling, or if info is none)."""
        cdef bint known
        cdef double value = self._measured_step(&self.jobs.row[self.rank_of[job_id]], &known)
        return value if known else None

    def predicted_work_s(self, double prior_s=0.0):
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system: waiting, then
        running, then in transition; a job without a prediction counts ``prior_s`` (its
        assumed solo duration) times the share of its iterations left (0 by default: the
        observation's rule).  [GPU s]"""
        if prior_s == 0.0:
            return self._predicted_work()
        cdef double work = 0.0
        cdef int i
        for i in range(self.jobs.queue_n):
            work += self._remaining_or_prior(&self.jobs.row[self.jobs.queue[i]], prior_s)
        for i in range(self.jobs.running_n):
            work += self._remaining_or_prior(&self.jobs.row[self.jobs.running[i]], prior_s)
        for i in range(self.jobs.transit_n):
            work += self._remaining_or_prior(&self.jobs.row[self.jobs.transit[i]], prior_s)
        return work

    cdef double _remaining_or_prior(self, Job* job, double prior_s) noexcept:
        """``predicted remaining x GPUs`` of one job, ``prior_s`` x its share left if
        there is no prediction.  [GPU s]"""
        cdef bint known
        cdef double value = self._predicted_remaining(job, &known)
        if not known:
            value = prior_s * (1.0 - self._done(job) / job.iterations)
        return value * job.num_gpus

    def fits(self, job_id):
        """``(shared, exclusive)``: whether a sharing strategy and the exclusive one find
        room for waiting job ``job_id`` now: the rule of the env's mask
        (``_job_fits``)."""
        cdef bint exclusive
        cdef Job* job = &self.jobs.row[self._rank(job_id)]
        self._refresh_gpus()
        shared = self._job_fits(job, &exclusive)
        return shared, exclusive

    def speed_if_placed(self, job_id, gpus, bint include_resuming):
        """``SimView.speed_if_placed``: (the job's own speed x V100 solo, the slowest
        co-located job's factor) if waiting job ``job_id`` joined ``gpus``, under the
        interference model the core applies; with ``include_resuming`` restarting
        tenants count as computing."""
        if self.measured:
            return self.measured_speed_if_placed(job_id, gpus, include_resuming)
        cdef int rank = self._rank(job_id), i, j, k, g, other
        cdef Job* job = &self.jobs.row[rank]
        cdef Job* mover
        cdef double own = 1.0, others = 1.0, extra_load, load, factor
        cdef int extra_count
        for g in gpus:
            if not 0 <= g < self.gpus.num_gpus:
                raise IndexError(f"GPU {g} does not exist (cluster has {self.gpus.num_gpus})")
            extra_load = 0.0
            extra_count = 0
            if include_resuming:  # in the order they began, as the load is summed
                for i in range(self.jobs.transit_n):
                    mover = &self.jobs.row[self.jobs.transit[i]]
                    if mover.status != RESUMING:
                        continue
                    for j in range(mover.held):
                        if self.jobs.gpus_of[mover.offset + j] == g:
                            extra_load += mover.intensity
                            extra_count += 1
            k = self.gpus.computing[g] + extra_count + 1
            load = self.gpus.load[g] + extra_load + job.intensity
            if self.interference_py is not None:
                models = []
                if self.interference_models:
                    for j in range(self.gpus.gpu_jobs_n[g]):
                        other = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
                        if self.jobs.row[other].status == RUNNING or (
                            include_resuming and self.jobs.row[other].status == RESUMING
                        ):
                            models.append(self.specs[other].model)
                    models.append(self.specs[rank].model)
                factor = self.interference_py.factor(load, k, models)
            elif not self.interference:
                factor = 1.0
            else:
                factor = contention_factor(load, k, self.alpha)
            own = min(own, factor * self.gpus.gpu_speed[g])
            if k > 1:
                others = min(others, factor)
        return own, others

    def find_placement(self, job_id, strategy):
        """GPUs the named strategy would give ``job_id`` now (sorted), or ``None``."""
        cdef int i, count
        cdef int rank = self.rank_of[job_id]
        count = self._find_placement(rank, self._strategy_index(job_id, strategy), self.gpus.scratch_gpus)
        if count < 0:
            return None
        return tuple([self.gpus.scratch_gpus[i] for i in range(count)])

    cdef int _strategy_index(self, job_id, strategy) except -1:
        refusal = self.rules.refusal(strategy)
        if refusal is not None:
            raise InvalidDecision(f"job {job_id}: {refusal}")
        return C_ENUMS["STRATEGIES"][strategy]

    cdef Job* _waiting(self, job_id) except NULL:
        cdef Job* job = &self.jobs.row[self._rank(job_id)]
        if job.status != PENDING and job.status != SUSPENDED:
            raise InvalidDecision(
                f"job {job_id}: only a pending or suspended job can be placed; "
                f"it is {JobStatus(job.status).name}"
            )
        return job

    def schedule(self, job_id, strategy):
        """Place ``job_id`` with a named strategy and return its GPUs.

        Raises:
            InvalidDecision: unknown strategy, the job is not waiting, or it does not fit.
        """
        cdef int i, count, index = self._strategy_index(job_id, strategy)
        cdef Job* job = self._waiting(job_id)
        cdef int rank = self.rank_of[job_id]
        count = self._find_placement(rank, index, self.gpus.scratch_gpus)
        if count < 0:
            if job.num_gpus == 0:
                raise InvalidDecision(
                    f"job {job_id}: no node has its {job.cpu:g} milli-CPU and "
                    f"{job.host_mem:g} MiB of host memory free now (strategy {strategy!r})"
                )
            raise InvalidDecision(
                f"job {job_id}: {job.num_gpus} worker(s) of {job.demand:g} "
                f"{self.gpus.unit} do not "
                f"fit now with strategy {strategy!r}"
            )
        gpus = tuple([self.gpus.scratch_gpus[i] for i in range(count)])
        self.ops.append(("schedule", job_id, strategy))
        self._take_rule(index)
        self._occupy(rank, self.gpus.chosen_node, self.gpus.scratch_gpus, count)
        return gpus

    def place(self, job_id, gpus):
        """Start (or resume) a waiting job on explicit GPUs.

        Raises:
            InvalidDecision: the job is not waiting, the GPU count or indices are wrong,
                or a GPU lacks memory or a worker slot.
        """
        cdef Job* job = self._waiting(job_id)
        cdef int i, g
        gpu_list = tuple(sorted(int(g) for g in gpus))
        if job.num_gpus == 0:
            raise InvalidDecision(
                f"job {job_id} holds no GPU: GPUs do not name its node; schedule it with "
                "a strategy"
            )
        if len(gpu_list) != job.num_gpus:
            raise InvalidDecision(
                f"job {job_id}: needs {job.num_gpus} GPU(s), got {len(gpu_list)}: {gpu_list}"
            )
        if len(set(gpu_list)) != len(gpu_list):
            raise InvalidDecision(f"job {job_id}: GPUs must be distinct, got {gpu_list}")
        for g in gpu_list:
            if not 0 <= g < self.gpus.num_gpus:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} does not exist (cluster has {self.gpus.num_gpus})"
                )
            if not self._fits(g, job):
                raise InvalidDecision(f"job {job_id}: {self._unfit_text(g, job)}")
        if self.gpus.one_node_gangs and len({self.gpus.gpu_node[g] for g in gpu_list}) > 1:
            raise InvalidDecision(
                f"job {job_id}: GPUs {gpu_list} are on several nodes; under the shares "
                "model a job's GPUs are on one node"
            )
        for i in range(job.num_gpus):
            self.gpus.scratch_gpus[i] = gpu_list[i]
        self.gpus.mig.rule = S_MIG_FIT
        self.ops.append(("place", job_id, gpu_list))
        self._occupy(
            self.rank_of[job_id], self.gpus.gpu_node[gpu_list[0]], self.gpus.scratch_gpus, job.num_gpus
        )

    cdef str _unfit_text(self, int g, Job* job):
        """Why ``_fits(g, job)`` is false, for ``place``'s error."""
        cdef int node = self.gpus.gpu_node[g]
        if self.gpus.free_cap[g] + EPS < job.demand:
            return (
                f"GPU {g} has {self.gpus.free_cap[g]:{self.gpus.free_format}} {self.gpus.unit} "
                f"free, a worker needs {job.demand:g} {self.gpus.unit} ({self.gpus.demand_name})"
            )
        if self.gpus.holders[g] >= self.gpus.max_jobs:
            return f"GPU {g} already hosts {self.gpus.max_jobs} workers (max_jobs_per_gpu)"
        if self.gpus.sharing != SHARING_SHARES:  # the fit's one other part (_fits_model)
            return self._mig_unfit_text(g, job)
        if not (job.model_mask >> self.gpus.gpu_model[g]) & 1:
            return f"GPU {g}'s model is not among the job's request.gpu_models"
        if self.gpus.node_cpu_free[node] + EPS < job.cpu:
            return (
                f"node {node} of GPU {g} has {self.gpus.node_cpu_free[node]:g} milli-CPU "
                f"free, the job requests {job.cpu:g}"
            )
        return (
            f"node {node} of GPU {g} has {self.gpus.node_mem_free[node]:g} MiB of host "
            f"memory free, the job requests {job.host_mem:g}"
        )

    cdef str _mig_unfit_text(self, int g, Job* job):
        cdef int rank = <int>(job - self.jobs.row)
        fitting = [
            self.gpus.mig.names[p] for p in range(self.gpus.mig.np)
            if self.jobs.mig_speed[rank * MIG_MAX_PROFILES + p] > 0.0
        ]
        free = [
            name for name, _start, jobs, reserved, mps in self.mig_instances(g)
            if not reserved and (not jobs or mps)
        ]
        return (
            f"GPU {g} has no MIG instance with room of a profile the job fits "
            f"(it fits {', '.join(fitting) or 'none'}; instances with room: {', '.join(free) or 'none'})"
        )

    def worker_parts(self, job_id):
        """``(capacity held, compute load)`` of each worker of ``job_id`` on the GPUs it
        holds, in their order (the job's demand and intensity, but under ``mig`` its
        instances')."""
        cdef Job* job = &self.jobs.row[self._rank(job_id)]
        return [
            (self.jobs.workers[job.offset + i].take, self.jobs.workers[job.offset + i].load)
            for i in range(job.held)
        ]

    cdef list _mig_jobs_on(self, int g):
        """Slot -> the ids of the jobs holding it, for GPU ``g``."""
        cdef int j, i, rank
        cdef Job* job
        holders = [[] for _ in range(MIG_SLOTS)]
        for j in range(self.gpus.gpu_jobs_n[g]):
            rank = self.gpus.gpu_jobs[g * self.gpus.max_jobs + j]
            job = &self.jobs.row[rank]
            for i in range(job.held):
                if self.jobs.gpus_of[job.offset + i] == g:
                    holders[self.jobs.workers[job.offset + i].inst].append(job.job_id)
        return holders

    cdef bint _mig_reserved(self, int gpu) noexcept:
        """Some instance of GPU ``gpu`` is reserved for a job."""
        cdef int i
        for i in range(MIG_SLOTS):
            if self.gpus.mig.inst_res[gpu * MIG_SLOTS + i] > 0:
                return True
        return False

    def mig_instances(self, int gpu):
        """GPU ``gpu``'s MIG instances by start: ``(profile name, start memory slice,
        ids of the jobs holding it, ids of the jobs reserving it, MPS-shared)`` (the mig
        model only)."""
        cdef int i, base, rank
        cdef MigTable mig = self.gpus.mig
        if not mig.np:
            raise ValueError("MIG instances exist under the mig model only (SimConfig.sharing = 'mig')")
        if not 0 <= gpu < self.gpus.num_gpus:
            raise ValueError(f"GPU {gpu} does not exist (cluster has {self.gpus.num_gpus})")
        base = gpu * MIG_SLOTS
        holders = self._mig_jobs_on(gpu)
        reserving = [[] for _ in range(MIG_SLOTS)]
        if self._mig_reserved(gpu):  # else no job to look for (the env asks every step)
            for rank in range(self.jobs.num_jobs):
                if mig.res_gpu[rank] == gpu:
                    reserving[mig.res_slot[rank]].append(self.jobs.row[rank].job_id)
        out = [
            (mig.names[mig.inst_profile[base + i]], mig.inst_start[base + i],
             tuple(holders[i]), tuple(reserving[i]), bool(mig.inst_mps[base + i]))
            for i in range(MIG_SLOTS) if mig.inst_profile[base + i] >= 0
        ]
        out.sort(key=lambda inst: inst[1])
        return out

    def repartition(self, int gpu, instances):
        """Re-partition MIG GPU ``gpu`` into ``instances``, ``(profile name, start memory
        slice, ids of the waiting jobs it is reserved for, MPS-shared)``: its idle
        instances are destroyed and the new ones created; every instance a job holds must
        be among ``instances`` as it is (a job that should move is suspended first: its
        checkpoint and restart are what moving costs). A reserved instance is taken only
        by its jobs, and first by them; the GPU's earlier reservations are dropped.

        Raises:
            InvalidDecision: not the mig model, an unknown GPU or profile, an invalid start,
                overlapping instances, more compute than the GPU has, a held instance
                missing, or a reservation for a job that is not waiting.
        """
        cdef int i, p, start, base, used = 0, compute = 0, slot, bits, rank
        cdef MigTable mig = self.gpus.mig
        cdef int[MIG_SLOTS] new_profile
        cdef int[MIG_SLOTS] new_start
        cdef int[MIG_SLOTS] new_mps
        cdef double[MIG_SLOTS] new_ready
        if not mig.np:
            raise InvalidDecision("repartition: MIG instances exist under the mig model only (SimConfig.sharing = 'mig')")
        if not 0 <= gpu < self.gpus.num_gpus:
            raise InvalidDecision(f"repartition: GPU {gpu} does not exist (cluster has {self.gpus.num_gpus})")
        wanted = []
        for name, start, jobs, mps in instances:
            if name not in mig.names:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: unknown MIG profile {name!r}; this GPU's are "
                    f"{', '.join(mig.names)}"
                )
            ranks = []
            for job_id in jobs:
                if job_id not in self.rank_of:
                    raise InvalidDecision(f"repartition GPU {gpu}: no job {job_id} to reserve an instance for")
                rank = self.rank_of[job_id]
                if self.jobs.row[rank].status not in (PENDING, SUSPENDING, SUSPENDED):
                    raise InvalidDecision(
                        f"repartition GPU {gpu}: job {job_id} is "
                        f"{JobStatus(self.jobs.row[rank].status).name}; only a waiting job "
                        "(pending, suspending or suspended) may reserve an instance"
                    )
                ranks.append(rank)
            if len(ranks) > 1 and not mps:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: {name} at slice {start} is reserved for jobs "
                    f"{list(jobs)}; only an MPS-shared instance holds several"
                )
            wanted.append((mig.names.index(name), int(start), ranks, 1 if mps else 0))
        if len(wanted) > MIG_SLOTS:
            raise InvalidDecision(f"repartition GPU {gpu}: at most {MIG_SLOTS} instances, got {len(wanted)}")
        for p, start, _, _ in wanted:
            name = mig.names[p]
            if not (0 <= start < 31 and (mig.starts[p] >> start) & 1):
                allowed = [t for t in range(mig.memory_slices) if (mig.starts[p] >> t) & 1]
                raise InvalidDecision(
                    f"repartition GPU {gpu}: {name} cannot start at memory slice {start}; "
                    f"allowed starts: {allowed}"
                )
            bits = ((1 << mig.memory[p]) - 1) << start
            if used & bits:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: {name} at slice {start} overlaps another instance "
                    f"({', '.join(f'{mig.names[q]}@{t}' for q, t, _, _ in wanted)})"
                )
            used |= bits
            compute += mig.compute[p]
        if compute > mig.compute_slices:
            raise InvalidDecision(
                f"repartition GPU {gpu}: the instances need {compute} compute slices, the GPU "
                f"has {mig.compute_slices}"
            )
        base = gpu * MIG_SLOTS
        for i in range(MIG_SLOTS):
            new_profile[i] = -1
            new_start[i] = 0
            new_mps[i] = 0
            new_ready[i] = 0.0
        holders = self._mig_jobs_on(gpu)
        remaining = list(wanted)
        slot_of = {}
        for i in range(MIG_SLOTS):  # held instances keep their slots
            if mig.inst_count[base + i] == 0:
                continue
            found = None
            for item in remaining:
                if (item[0], item[1], item[3]) == (mig.inst_profile[base + i], mig.inst_start[base + i], mig.inst_mps[base + i]):
                    found = item
                    break
            if found is None:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: job {holders[i][0]} holds "
                    f"{mig.names[mig.inst_profile[base + i]]}{' (MPS)' if mig.inst_mps[base + i] else ''} "
                    f"at slice {mig.inst_start[base + i]}, which the new partition lacks "
                    "(suspend the job first)"
                )
            if found[2] and not found[3]:
                raise InvalidDecision(
                    f"repartition GPU {gpu}: {mig.names[found[0]]} at slice {found[1]} is held; "
                    "it cannot be reserved"
                )
            remaining.remove(found)
            new_profile[i] = found[0]
            new_start[i] = found[1]
            new_mps[i] = found[3]
            new_ready[i] = mig.inst_ready[base + i]
            slot_of[id(found)] = i
        # idle instances the new partition keeps as they are stay (no operation); the
        # others are destroyed, the new ones created, one operation each, and exist once
        # all of them are done
        idle = {}
        for i in range(MIG_SLOTS):
            if mig.inst_profile[base + i] >= 0 and mig.inst_count[base + i] == 0:
                key = (mig.inst_profile[base + i], mig.inst_start[base + i], mig.inst_mps[base + i])
                idle[key] = mig.inst_ready[base + i]
        ready = {}
        created = 0
        for item in remaining:
            key = (item[0], item[1], item[3])
            if key in idle:
                ready[id(item)] = idle.pop(key)
            else:
                created += 1
        done = self.now + (created + len(idle)) * mig.op_s
        slot = 0
        for item in sorted(remaining, key=lambda it: it[1]):
            while new_profile[slot] >= 0:
                slot += 1
            new_profile[slot] = item[0]
            new_start[slot] = item[1]
            new_mps[slot] = item[3]
            new_ready[slot] = ready.get(id(item), done)
            slot_of[id(item)] = slot
        if self._mig_reserved(gpu):  # the GPU's earlier reservations go
            for rank in range(self.jobs.num_jobs):
                if mig.res_gpu[rank] == gpu:
                    self._mig_unreserve(rank)
        for i in range(MIG_SLOTS):
            mig.inst_profile[base + i] = new_profile[i]
            mig.inst_start[base + i] = new_start[i]
            mig.inst_mps[base + i] = new_mps[i]
            mig.inst_ready[base + i] = new_ready[i]
            mig.inst_res[base + i] = 0
        for item in wanted:
            for rank in item[2]:
                self._mig_unreserve(rank)
                mig.res_gpu[rank] = gpu
                mig.res_slot[rank] = slot_of[id(item)]
                mig.inst_res[base + slot_of[id(item)]] += 1
        self.ops.append((
            "repartition", gpu,
            tuple((mig.names[p], t, tuple(self.jobs.row[r].job_id for r in ranks), bool(m))
                  for p, t, ranks, m in wanted),
        ))
        self.gpus.gpu_epoch += 1
        self._touch_memory(&gpu, 1)

    def suspend(self, job_id):
        """Checkpoint a running job: it keeps its GPUs for its suspend overhead, then waits.

        Raises:
            InvalidDecision: the job is not running.
        """
        reason = self.suspend_refusal(job_id)
        if reason is not None:
            raise InvalidDecision(reason)
        self.ops.append(("suspend", job_id))
        self._suspend(self._rank(job_id))

    def advance(self):
        """Run time to the next event and process every event at that instant.

        Returns:
            The events processed, in order (``Event`` tuples).

        Raises:
            RuntimeError: nothing is left to happen.
        """
        cdef int i
        if self._next_event_time() == INFINITY:
            raise RuntimeError(
                "advance(): no event left"
                + (f" and {self.jobs.queue_n} job(s) waiting: place them first" if self.jobs.queue_n else "")
            )
        self.ops.append("advance")
        self._sim_advance()
        kinds = _EVENT_KINDS
        now = self.now
        return [
            Event(now, kinds[self.events_kind[i]], self.jobs.row[self.events_job[i]].job_id)
            for i in range(self.events_n)
        ]

    def colocation_factor(self, double load, int count, models=()):
        """The speed factor of each of ``count`` computing workers with compute load
        ``load`` on one GPU: the rule ``_touch_compute`` applies (``models``: their model
        names, for a Python interference model that reads them)."""
        if self.measured:
            raise TypeError(
                "measured interference has no per-GPU factor: each worker has its own "
                "(SimView.speed_if_placed)"
            )
        if self.interference_py is not None:
            return self.interference_py.factor(load, count, list(models))
        if not self.interference:
            return 1.0
        return contention_factor(load, count, self.alpha)

    def cluster_totals(self):
        """``(compute_in_use, allocated_gpus, free_memory_gib, fragmented_memory_gib,
        expected_fragment_gib)``, maintained incrementally (O(1))."""
        return self.meter.util_sum, self.meter.allocated, self.meter.free_sum, self.meter.frag_sum, self.meter.fgd_sum


include "_job_state.pxi"
