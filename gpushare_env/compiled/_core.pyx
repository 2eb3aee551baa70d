# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The simulator's engine: one episode in C, with the env's encoder and reward terms.

This is the only implementation of the simulation rules (events, rates, memory, the
placement strategies, suspend / resume, sampling and prediction) and of the observation,
mask and reward encoding; ``gpushare_env.sim.engine.Simulator`` is its Python face and
``SimView`` reads it (``docs/design/engine.md``). Jobs are C structs indexed by their
rank in arrival order; the event heap, the queue, the running and in-transition lists are
C arrays; an env step is one call (``step``), a headless decision one call too (``place``,
``schedule``, ``suspend``, ``advance``).

The per-GPU arrays (``free``, ``load``, ``computing``, ``holders``, ``factor``) are numpy
arrays the core writes through raw pointers: the view hands them to policies read-only,
and the rare placements done in Python (shared gangs on nodes wider than 128 GPUs, see
``Core._find_placement``) read the live state through them. The observation's column
indices are looked up by name in the layout the env passes in (the feature registry,
``gpushare_env.envs.features``).
"""

from libc.math cimport INFINITY, log2, log10, pow
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memset, memmove, memcpy

import numpy as np
cimport numpy as cnp

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
    # strategies (gpushare_env.sim.placement.STRATEGIES)
    S_EXCLUSIVE = 0
    S_PACK = 1
    S_SPREAD = 2
    S_MIN_FRAG = 3
    NUM_STRATEGIES = 4  # schedule actions per pending slot: one per strategy
    MAX_MODELS = 64

cdef double EPS = 1e-9

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
                   "min_frag": S_MIN_FRAG},
    "REWARD_COMPONENTS": {"jct": T_JCT, "makespan": T_MAKESPAN, "utilisation": T_UTIL,
                          "slowdown": T_SLOWDOWN, "starvation": T_STARVATION,
                          "overhead": T_OVERHEAD, "invalid": T_INVALID, "delay": T_DELAY},
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
    double memory
    double intensity
    double iterations
    double step_time
    double arrival
    int model  # index into the encoder's model names, -1 for other models
    double noise
    double suspend_overhead
    double resume_overhead
    double cross_factor
    int size_index  # index of its worker memory among the workload's sizes
    int status
    double progress
    double last_update
    double rate
    double speed
    int held  # GPUs held now (0 or num_gpus); they are gpus[offset : offset + held]
    int prev_held  # len(prev_gpus)
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


cdef void* checked_malloc(size_t size) except NULL:
    cdef void* p = malloc(size if size > 0 else 1)
    if p == NULL:
        raise MemoryError()
    memset(p, 0, size if size > 0 else 1)
    return p


cdef class Core:
    """One episode: jobs, cluster, events, observation buffer, mask and reward terms.

    Built by ``gpushare_env.sim.engine.new_core`` from ``core_inputs``.
    """

    # ------------------------------------------------------------ jobs and GPUs
    cdef Job* jobs
    cdef int num_jobs
    cdef int* gpus_of  # flat, each job's slice at its offset
    cdef int* prev_of
    cdef int num_gpus
    cdef int num_nodes
    cdef int node_width
    cdef int max_jobs
    cdef int* gpu_node
    cdef int* node_gpus  # (num_nodes, node_width), -1 padded
    cdef double* capacity
    cdef double* inv_capacity
    cdef double* gpu_speed
    cdef int* gpu_jobs  # (num_gpus, max_jobs) ranks in insertion order
    cdef int* gpu_jobs_n
    cdef double* free_mem  # numpy-owned
    cdef double* load
    cdef long* computing
    cdef long* holders
    cdef double* factor
    cdef public object free_array, load_array, computing_array, holders_array, factor_array
    cdef public object gpu_state  # GPUState over the live arrays (what SimView reads)
    cdef double* scratch_row  # (node_width) a node's GPU scores, sorted
    cdef int* scratch_cols  # (node_width) their columns
    cdef object strategy_names
    cdef bint equal_capacity
    cdef double min_capacity

    # -------------------------------------------------------------- simulator
    cdef public list specs  # JobSpec by rank
    cdef public dict rank_of  # job id -> rank
    cdef double alpha
    cdef bint interference
    cdef object interference_py  # a Python InterferenceModel (None: a built-in model)
    cdef bint interference_models  # it is told the models of the co-located workers
    # measured pairs (MeasuredContention): per-worker factors from tables
    cdef bint measured
    cdef double* pair_extra  # (tables, num_models, num_models) extra time, -1: not measured
    cdef int* gpu_table  # (G) each GPU's table
    cdef double* gpu_model_speed  # (G, models) each model's solo speed on each GPU
    cdef int* colocated  # (max_jobs) scratch: the workers beside one
    cdef int* transit  # SUSPENDING / RESUMING ranks in the order they began
    cdef int transit_n
    cdef public long sim_decisions  # placements and suspensions carried out
    cdef public object inputs  # the constructor's arguments (pickling rebuilds from them)
    cdef public list ops  # the episode's operations so far (pickling replays them)
    cdef int sample_iterations
    cdef int duration_info
    cdef bint record_timeline
    cdef double median_worker
    cdef double* reference
    cdef int num_reference
    cdef double* util_part
    cdef int* alloc_part
    cdef double* free_part
    cdef double* frag_part
    cdef double* fgd_part
    cdef public double util_sum
    cdef public long allocated
    cdef public double free_sum
    cdef public double frag_sum
    cdef public double fgd_sum
    cdef Entry* heap
    cdef int heap_n
    cdef int heap_cap
    cdef long seq
    cdef int* queue  # waiting ranks, sorted (rank order = (arrival, id) order)
    cdef int queue_n
    cdef int* running  # RUNNING ranks in the order they started
    cdef int running_n
    cdef int* finished  # ranks in finishing order
    cdef int finished_n
    cdef int next_arrival
    cdef public double now
    cdef public int in_system
    cdef public long events_processed
    cdef double* timeline
    cdef long timeline_n
    cdef long timeline_cap
    cdef int* events_kind  # events of the last advance
    cdef int* events_job
    cdef int events_n
    cdef int events_cap
    cdef int* touched_jobs  # scratch for _touch_compute
    cdef int* scratch_gpus  # scratch for placements (num_gpus)
    cdef double* scratch_score  # (num_gpus)
    cdef int* scratch_nodes  # (num_nodes)
    # incremental placement index (equal GPU memories, GPUs numbered node by node): idle
    # GPUs per node and the "open" GPUs (some workers, a free slot), so that one-worker
    # placements and exclusive gangs need no pass over the cluster
    cdef bint indexed
    cdef int* idle_on_node  # (num_nodes)
    cdef int idle_total
    cdef int* open_list
    cdef int* open_pos  # (num_gpus) index in open_list, -1 if not open
    cdef int open_n

    # -------------------------------------------------------------- encoder
    cdef int W
    cdef int R
    cdef int num_r  # running columns
    # Column indices, looked up by name in the layout the env passes in (the feature
    # registry, gpushare_env.envs.features); -1 for an optional column that is off.
    cdef int num_gpu_f, num_frag, num_global
    cdef int cg_free, cg_load, cg_workers, cg_node, cg_speed, cg_capacity
    cdef int cj_valid, cj_gpus, cj_memory, cj_intensity, cj_model0
    cdef int cj_wait, cj_sampled, cj_known, cj_predicted, cj_suspended, cj_progress
    cdef int cp_pack, cp_drain
    cdef int cr_speed, cr_held, cr_shares, cr_rival, cr_drain
    cdef int cl_time, cl_waiting, cl_backlog, cl_running, cl_transition, cl_in_system
    cdef int cl_finished, cl_util, cl_alloc, cl_free, cl_frag, cl_expected, cl_waiting_gpus
    cdef int cl_idle, cl_advance
    cdef double* frag_edges  # upper edges of the shared-GPU bins of frag_hist [GiB]
    cdef int num_frag_edges
    # pack / spread answers by job shape (GPUs requested, worker memory): the largest load
    # on the GPUs each strategy picks (+inf: none fit), valid while no GPU changed
    cdef long gpu_epoch  # bumped whenever a GPU's memory, workers or load changed
    cdef int* shape_of  # (num_jobs) by rank
    cdef long* shape_epoch  # (shapes) the gpu_epoch of the answers, -1: none yet
    cdef double* shape_peak  # (shapes, 2) pack, spread
    cdef int max_suspends  # -1: no cap
    cdef double min_service  # [s] service after a resume before the next suspension
    cdef double* mem_values
    cdef int num_mem_values
    cdef int* fit_counts
    cdef int* level
    cdef int* category
    cdef int* category_counts  # (num_frag)
    cdef public int idle_gpus
    cdef bint* dirty
    cdef int* dirty_list
    cdef int dirty_n
    cdef public object buffer_array  # float32, every observation key
    cdef float* buffer
    cdef public object mask_array
    cdef cnp.npy_bool* mask
    cdef int num_actions
    cdef int gpu_at, frag_at, pending_at, running_at, global_at
    cdef bint has_encoder  # False: a headless core (no layout given), it encodes nothing
    cdef int num_pw  # pending columns
    cdef int num_models
    cdef int* window_pending  # ranks in the window
    cdef public int pending_n
    cdef int* window_running
    cdef public int running_n_window
    cdef public int waiting_gpus
    # the rivals pass, by GPUs requested: the pass that last saw such a waiting job, the
    # longest wait and the shortest predicted remaining time (+inf: none predicted)
    cdef long* rival_seen  # (largest request + 1)
    cdef long rival_pass
    cdef double* rival_wait  # [s]
    cdef double* rival_left  # [s]
    cdef public bint has_choice
    cdef public bint can_advance
    cdef double inv_max_speed
    cdef double inv_slots
    cdef double inv_gpus
    cdef double inv_jobs
    cdef double inv_total_memory
    cdef double log_gpus
    cdef double max_capacity

    # -------------------------------------------------------------- env
    cdef double[NUM_TERMS] weights
    cdef double[NUM_TERMS] terms
    cdef double inv_scale
    cdef double* inv_solo
    cdef double queued_since_sum
    cdef double inv_solo_sum
    cdef int transition_gpus
    cdef bint arrived
    cdef public bint deadlock
    cdef bint auto_advance
    cdef bint has_time_cap
    cdef double max_time
    cdef public long decisions
    cdef public object truncated_by  # why step() truncated the episode, None until then
    cdef long decision_cap
    cdef double invalid_penalty

    def __cinit__(self):
        self.jobs = NULL

    def __dealloc__(self):
        free(self.jobs)
        free(self.gpus_of)
        free(self.prev_of)
        free(self.gpu_node)
        free(self.node_gpus)
        free(self.capacity)
        free(self.inv_capacity)
        free(self.gpu_speed)
        free(self.gpu_jobs)
        free(self.gpu_jobs_n)
        free(self.reference)
        free(self.util_part)
        free(self.alloc_part)
        free(self.free_part)
        free(self.frag_part)
        free(self.fgd_part)
        free(self.heap)
        free(self.queue)
        free(self.running)
        free(self.finished)
        free(self.timeline)
        free(self.events_kind)
        free(self.events_job)
        free(self.touched_jobs)
        free(self.pair_extra)
        free(self.gpu_table)
        free(self.gpu_model_speed)
        free(self.colocated)
        free(self.scratch_gpus)
        free(self.scratch_score)
        free(self.scratch_nodes)
        free(self.scratch_row)
        free(self.scratch_cols)
        free(self.idle_on_node)
        free(self.open_list)
        free(self.open_pos)
        free(self.mem_values)
        free(self.fit_counts)
        free(self.level)
        free(self.category)
        free(self.dirty)
        free(self.dirty_list)
        free(self.window_pending)
        free(self.window_running)
        free(self.shape_of)
        free(self.shape_epoch)
        free(self.shape_peak)
        free(self.rival_seen)
        free(self.rival_wait)
        free(self.rival_left)
        free(self.inv_solo)
        free(self.frag_edges)
        free(self.category_counts)
        free(self.transit)

    def __init__(
        self,
        dict jobs_in,
        dict cluster_in,
        dict sim_in,
        dict encoder_in,
        dict env_in,
    ):
        """Build the episode (see ``gpushare_env.sim.engine.Simulator`` for the keys)."""
        cdef int i, g, n, k, offset
        cdef Job* job
        self.inputs = (jobs_in, cluster_in, sim_in, encoder_in, env_in)
        self.ops = []
        # ---- cluster
        capacity = np.ascontiguousarray(cluster_in["gpu_memory_gib"], dtype=np.float64)
        gpu_node = np.ascontiguousarray(cluster_in["gpu_node"], dtype=np.int64)
        node_gpus = np.ascontiguousarray(cluster_in["node_gpus"], dtype=np.int64)
        speed = np.ascontiguousarray(cluster_in["gpu_speed"], dtype=np.float64)
        self.num_gpus = g = len(capacity)
        self.num_nodes = node_gpus.shape[0]
        self.node_width = node_gpus.shape[1]
        self.max_jobs = cluster_in["max_jobs_per_gpu"]
        self.gpu_node = <int*>checked_malloc(g * sizeof(int))
        self.node_gpus = <int*>checked_malloc(self.num_nodes * self.node_width * sizeof(int))
        self.capacity = <double*>checked_malloc(g * sizeof(double))
        self.inv_capacity = <double*>checked_malloc(g * sizeof(double))
        self.gpu_speed = <double*>checked_malloc(g * sizeof(double))
        for i in range(g):
            self.gpu_node[i] = gpu_node[i]
            self.capacity[i] = capacity[i]
            self.inv_capacity[i] = 1.0 / capacity[i]
            self.gpu_speed[i] = speed[i]
        flat_nodes = node_gpus.ravel().tolist()
        for i in range(self.num_nodes * self.node_width):
            self.node_gpus[i] = flat_nodes[i]
        self.gpu_jobs = <int*>checked_malloc(g * self.max_jobs * sizeof(int))
        self.gpu_jobs_n = <int*>checked_malloc(g * sizeof(int))
        self.max_capacity = float(capacity.max())
        self.min_capacity = float(capacity.min())
        self.equal_capacity = bool(np.all(capacity == capacity[0]))
        self.free_array = capacity.copy()
        self.load_array = np.zeros(g)
        self.computing_array = np.zeros(g, dtype=np.int64)
        self.holders_array = np.zeros(g, dtype=np.int64)
        self.factor_array = np.ones(g)
        self.free_mem = <double*>cnp.PyArray_DATA(self.free_array)
        self.load = <double*>cnp.PyArray_DATA(self.load_array)
        self.computing = <long*>cnp.PyArray_DATA(self.computing_array)
        self.holders = <long*>cnp.PyArray_DATA(self.holders_array)
        self.factor = <double*>cnp.PyArray_DATA(self.factor_array)
        self.scratch_row = <double*>checked_malloc(self.node_width * sizeof(double))
        self.scratch_cols = <int*>checked_malloc(self.node_width * sizeof(int))
        self.strategy_names = tuple(cluster_in["strategies"])
        if len(self.strategy_names) != NUM_STRATEGIES:
            raise ValueError(
                f"the core has {NUM_STRATEGIES} placement strategies, given "
                f"{len(self.strategy_names)}: {self.strategy_names}"
            )
        self.scratch_gpus = <int*>checked_malloc(g * sizeof(int))
        self.scratch_score = <double*>checked_malloc(g * sizeof(double))
        self.scratch_nodes = <int*>checked_malloc(self.num_nodes * sizeof(int))
        members = [gpu for gpu in flat_nodes if gpu >= 0]
        self.indexed = self.equal_capacity and members == list(range(g))
        self.idle_on_node = <int*>checked_malloc(self.num_nodes * sizeof(int))
        for i in range(self.num_nodes):
            self.idle_on_node[i] = sum(1 for gpu in flat_nodes[
                i * self.node_width : (i + 1) * self.node_width] if gpu >= 0)
        self.idle_total = g
        self.open_list = <int*>checked_malloc(g * sizeof(int))
        self.open_pos = <int*>checked_malloc(g * sizeof(int))
        for i in range(g):
            self.open_pos[i] = -1

        # ---- jobs, in (arrival, id) order
        ids = jobs_in["job_id"]
        n = self.num_jobs = len(ids)
        self.jobs = <Job*>checked_malloc(n * sizeof(Job))
        total_gpus = int(sum(jobs_in["num_gpus"]))
        self.gpus_of = <int*>checked_malloc(total_gpus * sizeof(int))
        self.prev_of = <int*>checked_malloc(total_gpus * sizeof(int))
        self.inv_solo = <double*>checked_malloc(n * sizeof(double))
        self.transit = <int*>checked_malloc(n * sizeof(int))
        self.specs = list(jobs_in["spec"])
        self.rank_of = {job_id: i for i, job_id in enumerate(ids)}
        offset = 0
        for i in range(n):
            job = &self.jobs[i]
            job.job_id = ids[i]
            job.num_gpus = jobs_in["num_gpus"][i]
            job.memory = jobs_in["memory_gib"][i]
            job.intensity = jobs_in["intensity"][i]
            job.iterations = jobs_in["iterations"][i]
            job.step_time = jobs_in["step_time_s"][i]
            job.arrival = jobs_in["arrival_s"][i]
            job.model = jobs_in["model_index"][i]
            job.noise = jobs_in["noise"][i]
            job.suspend_overhead = jobs_in["suspend_overhead_s"][i]
            job.resume_overhead = jobs_in["resume_overhead_s"][i]
            job.cross_factor = jobs_in["cross_node_factor"][i]
            job.size_index = jobs_in["size_index"][i]
            job.status = FUTURE
            job.offset = offset
            job.first_start = float("nan")
            job.finish = float("nan")
            offset += job.num_gpus
            self.inv_solo[i] = jobs_in["inv_solo_s"][i]

        # ---- simulator
        self.alpha = sim_in["alpha"]
        self.interference = sim_in["interference"]
        self.interference_py = sim_in["interference_model"]
        self.interference_models = sim_in["interference_models"]
        self.colocated = <int*>checked_malloc((self.max_jobs + 1) * sizeof(int))
        measured = sim_in["measured"]
        self.measured = measured is not None
        if self.measured:
            if measured["num_models"] != encoder_in["num_models"]:
                raise ValueError("measured tables: one row per encoder model expected")
            table = measured["pair_extra"]
            self.pair_extra = <double*>checked_malloc((len(table) + 1) * sizeof(double))
            for i in range(len(table)):
                self.pair_extra[i] = table[i]
            table = measured["gpu_table"]
            self.gpu_table = <int*>checked_malloc(g * sizeof(int))
            for i in range(g):
                self.gpu_table[i] = table[i]
            table = measured["gpu_model_speed"]
            self.gpu_model_speed = <double*>checked_malloc((len(table) + 1) * sizeof(double))
            for i in range(len(table)):
                self.gpu_model_speed[i] = table[i]
        self.sample_iterations = sim_in["sample_iterations"]
        self.duration_info = ("none", "sampled", "oracle").index(sim_in["duration_info"])
        self.record_timeline = sim_in["record_timeline"]
        cap = sim_in["max_suspends_per_job"]
        self.max_suspends = -1 if cap is None else cap
        self.min_service = sim_in["min_service_s"]
        reference = sim_in["reference_memory_gib"]  # sorted
        self.num_reference = len(reference)
        self.reference = <double*>checked_malloc(self.num_reference * sizeof(double))
        for i in range(self.num_reference):
            self.reference[i] = reference[i]
        self.median_worker = sim_in["median_worker_gib"]
        self.util_part = <double*>checked_malloc(g * sizeof(double))
        self.alloc_part = <int*>checked_malloc(g * sizeof(int))
        self.free_part = <double*>checked_malloc(g * sizeof(double))
        self.frag_part = <double*>checked_malloc(g * sizeof(double))
        self.fgd_part = <double*>checked_malloc(g * sizeof(double))
        for i in range(g):
            self.free_part[i] = capacity[i]
            # an idle GPU's expected fragment: its memory, times the share of the
            # workload's workers that do not fit it (the rule of _touch_memory)
            k = upper_bound(self.reference, self.num_reference, self.capacity[i] + EPS)
            self.fgd_part[i] = self.capacity[i] * (
                1.0 - <double>k / <double>self.num_reference
            )
        self.util_sum = 0.0
        self.allocated = 0
        self.free_sum = float(capacity.sum())
        self.frag_sum = 0.0
        self.fgd_sum = pairwise_sum(self.fgd_part, g)
        self.heap_cap = 64
        self.heap = <Entry*>checked_malloc(self.heap_cap * sizeof(Entry))
        self.queue = <int*>checked_malloc(n * sizeof(int))
        self.running = <int*>checked_malloc(n * sizeof(int))
        self.finished = <int*>checked_malloc(n * sizeof(int))
        self.timeline_cap = 1024
        self.timeline = <double*>checked_malloc(self.timeline_cap * 8 * sizeof(double))
        self.events_cap = 64
        self.events_kind = <int*>checked_malloc(self.events_cap * sizeof(int))
        self.events_job = <int*>checked_malloc(self.events_cap * sizeof(int))
        self.touched_jobs = <int*>checked_malloc((n + 1) * sizeof(int))
        self.now = 0.0
        self._record()

        # ---- encoder
        self.W = encoder_in["pending_window"]
        self.R = encoder_in["running_window"]
        self.num_models = encoder_in["num_models"]
        if self.num_models > MAX_MODELS:
            raise ValueError(f"the compiled core handles at most {MAX_MODELS} models")
        self._layout(encoder_in["columns"], encoder_in["frag_edges"])
        mem_values = encoder_in["memory_sizes"]
        self.num_mem_values = len(mem_values)
        self.mem_values = <double*>checked_malloc(self.num_mem_values * sizeof(double))
        for i in range(self.num_mem_values):
            self.mem_values[i] = mem_values[i]
        self.fit_counts = <int*>checked_malloc(self.num_mem_values * sizeof(int))
        self.level = <int*>checked_malloc(g * sizeof(int))
        self.category = <int*>checked_malloc(g * sizeof(int))
        self.category_counts = <int*>checked_malloc(self.num_frag * sizeof(int))
        memset(self.category_counts, 0, self.num_frag * sizeof(int))
        self.category_counts[0] = g
        self.idle_gpus = g
        self.dirty = <bint*>checked_malloc(g * sizeof(bint))
        self.dirty_list = <int*>checked_malloc(g * sizeof(int))
        self.window_pending = <int*>checked_malloc((self.W + 1) * sizeof(int))
        self.window_running = <int*>checked_malloc((self.R + 1) * sizeof(int))
        self.gpu_at = 0
        self.frag_at = g * self.num_gpu_f
        self.pending_at = self.frag_at + self.num_frag
        self.running_at = self.pending_at + self.W * self.num_pw
        self.global_at = self.running_at + self.R * self.num_r
        self.buffer_array = np.zeros(self.global_at + self.num_global, dtype=np.float32)
        self.buffer = <float*>cnp.PyArray_DATA(self.buffer_array)
        self.num_actions = self.W * NUM_STRATEGIES + self.R + 1
        self.mask_array = np.zeros(self.num_actions, dtype=bool)
        self.mask = <cnp.npy_bool*>cnp.PyArray_DATA(self.mask_array)
        self.inv_max_speed = 1.0 / float(speed.max())
        self.inv_slots = 1.0 / self.max_jobs
        self.inv_gpus = 1.0 / g
        self.inv_jobs = 1.0 / n
        self.inv_total_memory = 1.0 / float(capacity.sum())
        self.log_gpus = encoder_in["log_gpus"]
        if self.has_encoder:
            gpu_rows = self.buffer_array[: self.frag_at].reshape(g, self.num_gpu_f)
            num_nodes = max(self.num_nodes - 1, 1)
            gpu_rows[:, self.cg_node] = gpu_node / num_nodes
            gpu_rows[:, self.cg_speed] = speed * self.inv_max_speed
            gpu_rows[:, self.cg_capacity] = capacity / self.max_capacity
            self.buffer[self.frag_at] = 1.0
        for i in range(g):
            self._mark(i)
        self.pending_n = 0
        self.running_n_window = 0
        k = max(jobs_in["num_gpus"]) + 1
        self.rival_seen = <long*>checked_malloc(k * sizeof(long))
        self.rival_wait = <double*>checked_malloc(k * sizeof(double))
        self.rival_left = <double*>checked_malloc(k * sizeof(double))
        shapes = {}
        self.shape_of = <int*>checked_malloc(self.num_jobs * sizeof(int))
        for i in range(self.num_jobs):
            job = &self.jobs[i]
            self.shape_of[i] = shapes.setdefault((job.num_gpus, job.size_index), len(shapes))
        self.shape_epoch = <long*>checked_malloc(len(shapes) * sizeof(long))
        self.shape_peak = <double*>checked_malloc(2 * len(shapes) * sizeof(double))
        for i in range(len(shapes)):
            self.shape_epoch[i] = -1

        # ---- env
        weights = env_in["weights"]
        if len(weights) not in (0, NUM_TERMS):
            raise ValueError(
                f"reward weights: expected {NUM_TERMS} (one per reward component) or none, "
                f"got {len(weights)}"
            )
        for i in range(NUM_TERMS):
            self.weights[i] = weights[i] if len(weights) else 0.0
        self.inv_scale = env_in["inv_scale"]
        self.auto_advance = env_in["auto_advance"]
        self.has_time_cap = env_in["max_time_s"] is not None
        self.max_time = env_in["max_time_s"] if self.has_time_cap else 0.0
        self.decision_cap = env_in["decision_cap"]
        self.invalid_penalty = env_in["invalid_penalty"]
        self.decisions = 0
        self.truncated_by = None

    def _layout(self, columns, frag_edges):
        """Column indices from the names of each observation key's columns (``None``: a
        headless core, which encodes nothing)."""
        cdef int i
        self.has_encoder = columns is not None
        edges = list(frag_edges)
        self.num_frag_edges = len(edges)
        self.frag_edges = <double*>checked_malloc(max(len(edges), 1) * sizeof(double))
        for i in range(len(edges)):
            self.frag_edges[i] = edges[i]
        if columns is None:  # headless: a minimal layout, never written
            self.num_gpu_f = self.num_global = 0
            self.num_frag = len(edges) + 3
            self.num_pw = self.num_r = 0
            return
        gpus, pending, running, glob = (
            list(columns["gpus"]), list(columns["pending"]), list(columns["running"]),
            list(columns["global"]),
        )
        self.num_gpu_f, self.num_pw, self.num_r = len(gpus), len(pending), len(running)
        self.num_global = len(glob)
        self.num_frag = len(columns["frag_hist"])
        if self.num_frag != len(edges) + 3:
            raise ValueError("frag_hist: idle, a bin below each edge and one above, no_slot")
        self.cg_free, self.cg_load, self.cg_workers = (
            gpus.index("free_memory"), gpus.index("load"), gpus.index("workers"),
        )
        self.cg_node, self.cg_speed, self.cg_capacity = (
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
        (self.cj_valid, self.cj_gpus, self.cj_memory, self.cj_intensity, self.cj_wait,
         self.cj_sampled, self.cj_known, self.cj_predicted, self.cj_suspended,
         self.cj_progress) = [pending.index(name) for name in job_columns]
        models = [name for name in pending if name.startswith("model_")]
        self.cj_model0 = pending.index(models[0])
        if len(models) != self.num_models or pending[self.cj_model0 : self.cj_model0 + len(
            models
        )] != models:
            raise ValueError("the model one-hot columns must be contiguous, one per model")

        def optional(names, name):
            return names.index(name) if name in names else -1

        self.cp_pack = optional(pending, "pack_load")
        if self.cp_pack >= 0 and pending.index("spread_load") != self.cp_pack + 1:
            raise ValueError("spread_load must follow pack_load")
        self.cp_drain = optional(pending, "drain_share")
        self.cr_speed = running.index("speed")
        self.cr_held = optional(running, "held_time")
        self.cr_shares = optional(running, "shares_gpu")
        self.cr_rival = optional(running, "rival_wait")
        if self.cr_rival >= 0 and running.index("rival_remaining") != self.cr_rival + 1:
            raise ValueError("rival_remaining must follow rival_wait")
        self.cr_drain = optional(running, "drain_share")
        (self.cl_time, self.cl_waiting, self.cl_backlog, self.cl_running, self.cl_transition,
         self.cl_in_system, self.cl_finished, self.cl_util, self.cl_alloc, self.cl_free,
         self.cl_frag, self.cl_expected, self.cl_waiting_gpus, self.cl_idle,
         self.cl_advance) = [glob.index(name) for name in (
            "time", "waiting", "backlog", "running", "in_transition", "in_system",
            "finished", "utilisation", "allocation", "free_memory", "fragmentation",
            "expected_fragment", "waiting_gpus", "idle_gpus", "can_advance",
        )]

    # ================================================================ simulator
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

    cdef void _record(self) except *:
        cdef double* row
        if not self.record_timeline:
            return
        if self.timeline_n and self.timeline[(self.timeline_n - 1) * 8] == self.now:
            row = &self.timeline[(self.timeline_n - 1) * 8]
        else:
            if self.timeline_n == self.timeline_cap:
                self.timeline_cap *= 2
                self.timeline = <double*>realloc(
                    self.timeline, self.timeline_cap * 8 * sizeof(double)
                )
                if self.timeline == NULL:
                    raise MemoryError()
            row = &self.timeline[self.timeline_n * 8]
            self.timeline_n += 1
        row[0] = self.now
        row[1] = self.util_sum
        row[2] = <double>self.allocated
        row[3] = self.free_sum
        row[4] = self.frag_sum
        row[5] = self.fgd_sum
        row[6] = <double>self.in_system
        row[7] = <double>self.queue_n

    cdef inline void _mark(self, int g) noexcept:
        if not self.dirty[g]:
            self.dirty[g] = True
            self.dirty_list[self.dirty_n] = g
            self.dirty_n += 1

    cdef inline int _queue_position(self, int rank) noexcept:
        """Where ``rank`` is or goes in the sorted queue (``bisect_left``)."""
        cdef int lo = 0, hi = self.queue_n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.queue[mid] < rank:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef void _enqueue(self, int rank) noexcept:
        cdef int lo = self._queue_position(rank)
        memmove(&self.queue[lo + 1], &self.queue[lo], (self.queue_n - lo) * sizeof(int))
        self.queue[lo] = rank
        self.queue_n += 1
        self.jobs[rank].queued_since = self.now

    cdef void _dequeue(self, int rank) noexcept:
        cdef int lo = self._queue_position(rank)
        memmove(&self.queue[lo], &self.queue[lo + 1], (self.queue_n - lo - 1) * sizeof(int))
        self.queue_n -= 1
        cdef Job* job = &self.jobs[rank]
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
            free_gib = self.free_mem[g]
            held = self.holders[g]
            alloc = 1 if held > 0 else 0
            self.allocated += alloc - self.alloc_part[g]
            self.alloc_part[g] = alloc
            self.free_sum += free_gib - self.free_part[g]
            self.free_part[g] = free_gib
            if held > 0 and (free_gib + EPS < self.median_worker or held >= self.max_jobs):
                frag = free_gib
            else:
                frag = 0.0
            self.frag_sum += frag - self.frag_part[g]
            self.frag_part[g] = frag
            if held >= self.max_jobs:
                fgd = free_gib
            else:
                fits = upper_bound(self.reference, self.num_reference, free_gib + EPS)
                fgd = free_gib * (1.0 - <double>fits / <double>self.num_reference)
            self.fgd_sum += fgd - self.fgd_part[g]
            self.fgd_part[g] = fgd

    cdef void _touch_compute(self, int* gpus, int count, int force) except *:
        """The computing workers of ``gpus`` changed (``force``: a rank or -1)."""
        cdef int i, j, g, k, rank, n = 0
        cdef double load, util, contention
        cdef int* affected = self.touched_jobs
        cdef bint seen
        for i in range(count):
            g = gpus[i]
            self._mark(g)
            k = self.computing[g]
            load = self.load[g]
            if k > 0:
                if self.measured:
                    self.factor[g] = self._slowest_measured(g)
                elif self.interference_py is not None:
                    self.factor[g] = self._python_factor(g, k, load)
                elif self.interference:
                    self.factor[g] = contention_factor(load, k, self.alpha)
                else:
                    self.factor[g] = 1.0
            else:
                self.factor[g] = 1.0
            for j in range(self.gpu_jobs_n[g]):
                rank = self.gpu_jobs[g * self.max_jobs + j]
                seen = False
                for k in range(n):
                    if affected[k] == rank:
                        seen = True
                        break
                if not seen:
                    affected[n] = rank
                    n += 1
            util = load if load < 1.0 else 1.0
            self.util_sum += util - self.util_part[g]
            self.util_part[g] = util
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
            if self.jobs[rank].status == RUNNING:
                self._update_rate(rank, rank == force)

    cdef double _python_factor(self, int g, int k, double load) except *:
        """The factor of a GPU's workers under a Python ``InterferenceModel``."""
        cdef int j, rank
        models = []
        if self.interference_models:
            for j in range(self.gpu_jobs_n[g]):
                rank = self.gpu_jobs[g * self.max_jobs + j]
                if self.jobs[rank].status == RUNNING:
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
        cdef Job* a = &self.jobs[rank]
        cdef Job* b
        cdef int i, t = self.gpu_table[g], m = self.num_models
        cdef double extra = 0.0, e
        cdef bint any_measured = False
        if n == 0:
            return 1.0
        for i in range(n):
            b = &self.jobs[others[i]]
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
            return self.gpu_model_speed[g * self.num_models + job.model]
        return self.gpu_speed[g]

    cdef int _colocated_with(self, int rank, int g, bint resuming) noexcept:
        """Fill ``colocated`` with the jobs computing on ``g`` other than ``rank`` (with
        ``resuming``: restarting ones too); return how many."""
        cdef int j, other, status, n = 0
        for j in range(self.gpu_jobs_n[g]):
            other = self.gpu_jobs[g * self.max_jobs + j]
            status = self.jobs[other].status
            if other != rank and (status == RUNNING or (resuming and status == RESUMING)):
                self.colocated[n] = other
                n += 1
        return n

    cdef double _worker_speed(self, int rank, int g) noexcept:
        """Speed (x V100 solo) of computing job ``rank``'s worker on GPU ``g``."""
        cdef int n = self._colocated_with(rank, g, False)
        cdef double f = self._measured_factor(
            rank, g, self.colocated, n, self.load[g], self.computing[g]
        )
        return f * self._model_speed(&self.jobs[rank], g)

    cdef double _slowest_measured(self, int g) noexcept:
        """The smallest factor among the workers computing on ``g`` (``GPUState.factor``)."""
        cdef int j, rank, n
        cdef double f, slowest = 1.0
        for j in range(self.gpu_jobs_n[g]):
            rank = self.gpu_jobs[g * self.max_jobs + j]
            if self.jobs[rank].status != RUNNING:
                continue
            n = self._colocated_with(rank, g, False)
            f = self._measured_factor(rank, g, self.colocated, n, self.load[g], self.computing[g])
            if f < slowest:
                slowest = f
        return slowest

    def measured_speed_if_placed(self, job_id, gpus, bint include_resuming):
        """``SimView.speed_if_placed`` under measured pairs: (the job's own speed x V100
        solo, the slowest co-located job's factor) if it joined ``gpus``."""
        cdef int rank = self.rank_of[job_id], n, i, j, k, member, kept
        cdef Job* job = &self.jobs[rank]
        cdef double own = 1.0, others = 1.0, load, f  # as the analytic path: own <= 1
        cdef int* members = self.touched_jobs
        for g in gpus:
            n = self._colocated_with(rank, g, include_resuming)
            load = job.intensity
            for i in range(n):
                members[i] = self.colocated[i]
                load += self.jobs[members[i]].intensity
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
                        self.colocated[kept] = members[j]
                        kept += 1
                f = self._measured_factor(member, g, self.colocated, kept, load, k)
                if f < others:
                    others = f
        return own, others

    cdef void _update_rate(self, int rank, bint force) except *:
        cdef Job* job = &self.jobs[rank]
        cdef int* gpus = &self.gpus_of[job.offset]
        cdef int i, g
        cdef double slowest, value, rate, remaining, finish_in
        g = gpus[0]
        if self.measured:
            slowest = self._worker_speed(rank, g)
            for i in range(1, job.held):
                value = self._worker_speed(rank, gpus[i])
                if value < slowest:
                    slowest = value
        else:
            slowest = self.factor[g] * self.gpu_speed[g]
            for i in range(1, job.held):
                g = gpus[i]
                value = self.factor[g] * self.gpu_speed[g]
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
        cdef Job* job = &self.jobs[rank]
        cdef int* gpus = &self.gpus_of[job.offset]
        cdef int i, g
        job.status = RUNNING
        job.service_since = self.now
        self.running[self.running_n] = rank
        self.running_n += 1
        for i in range(job.held):
            g = gpus[i]
            self.load[g] = self.load[g] + job.intensity
            self.computing[g] += 1
        job.last_update = self.now
        job.rate = 0.0
        self._touch_compute(gpus, job.held, rank)

    cdef void _stop_compute(self, int rank, int status) noexcept:
        cdef Job* job = &self.jobs[rank]
        cdef int* gpus = &self.gpus_of[job.offset]
        cdef int i, g
        cdef long left
        self._fold(job)
        job.status = status
        job.rate = 0.0
        job.speed = 0.0
        job.version += 1
        for i in range(self.running_n):
            if self.running[i] == rank:
                memmove(
                    &self.running[i], &self.running[i + 1], (self.running_n - i - 1) * sizeof(int)
                )
                self.running_n -= 1
                break
        for i in range(job.held):
            g = gpus[i]
            left = self.computing[g] - 1
            self.computing[g] = left
            self.load[g] = self.load[g] - job.intensity if left > 0 else 0.0

    cdef void _release(self, int rank) noexcept:
        cdef Job* job = &self.jobs[rank]
        cdef int* gpus = &self.gpus_of[job.offset]
        cdef int i, j, g, n
        cdef long held
        cdef int* row
        job.gpu_seconds += (self.now - job.held_since) * job.num_gpus
        for i in range(job.held):
            g = gpus[i]
            held = self.holders[g] - 1
            self.holders[g] = held
            self._holders_changed(g, held + 1)
            if held == 0:
                self.free_mem[g] = self.capacity[g]
            else:
                self.free_mem[g] = self.free_mem[g] + job.memory
            row = &self.gpu_jobs[g * self.max_jobs]
            n = self.gpu_jobs_n[g]
            for j in range(n):
                if row[j] == rank:
                    memmove(&row[j], &row[j + 1], (n - j - 1) * sizeof(int))
                    break
            self.gpu_jobs_n[g] = n - 1
        memcpy(&self.prev_of[job.offset], gpus, job.held * sizeof(int))
        job.prev_held = job.held
        job.held = 0

    cdef void _finish(self, int rank) except *:
        cdef Job* job = &self.jobs[rank]
        job.progress = job.iterations
        job.rate = 0.0
        self._stop_compute(rank, FINISHED)
        self._release(rank)
        self._touch_memory(&self.prev_of[job.offset], job.prev_held)
        self._touch_compute(&self.prev_of[job.offset], job.prev_held, -1)
        job.finish = self.now
        self.in_system -= 1
        self.finished[self.finished_n] = rank
        self.finished_n += 1

    cdef void _occupy(self, int rank, int* chosen, int count) except *:
        """Carry out a checked placement: ``chosen`` sorted, distinct, with room."""
        cdef Job* job = &self.jobs[rank]
        cdef int* gpus = &self.gpus_of[job.offset]
        cdef int i, g, node
        self._dequeue(rank)
        memcpy(gpus, chosen, count * sizeof(int))
        job.held = count
        job.held_since = self.now
        job.cross_node = False
        if count > 1:
            node = self.gpu_node[gpus[0]]
            for i in range(1, count):
                if self.gpu_node[gpus[i]] != node:
                    job.cross_node = True
                    break
        for i in range(count):
            g = gpus[i]
            self.free_mem[g] = self.free_mem[g] - job.memory
            self.holders[g] += 1
            self._holders_changed(g, self.holders[g] - 1)
            self.gpu_jobs[g * self.max_jobs + self.gpu_jobs_n[g]] = rank
            self.gpu_jobs_n[g] += 1
        self._touch_memory(gpus, count)
        if job.status == PENDING:
            job.first_start = self.now
            self._start_compute(rank)
        else:  # SUSPENDED: restart first, holding the GPUs without progress
            job.status = RESUMING
            job.transition_since = self.now
            self._transit_add(rank)
            job.version += 1
            self._push(self.now + job.resume_overhead, EV_RESUME_DONE, rank)
        self.sim_decisions += 1
        self._record()

    cdef void _suspend(self, int rank) except *:
        cdef Job* job = &self.jobs[rank]
        self._stop_compute(rank, SUSPENDING)
        self._touch_compute(&self.gpus_of[job.offset], job.held, -1)
        job.transition_since = self.now
        self._transit_add(rank)
        self._push(self.now + job.suspend_overhead, EV_SUSPEND_DONE, rank)
        self.sim_decisions += 1
        self._record()

    cdef inline void _transit_add(self, int rank) noexcept:
        self.transit[self.transit_n] = rank
        self.transit_n += 1

    cdef void _transit_remove(self, int rank) noexcept:
        cdef int i
        for i in range(self.transit_n):
            if self.transit[i] == rank:
                memmove(
                    &self.transit[i], &self.transit[i + 1], (self.transit_n - i - 1) * sizeof(int)
                )
                self.transit_n -= 1
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
        cdef Job* job = &self.jobs[rank]
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
            self._touch_memory(&self.prev_of[job.offset], job.prev_held)
            job.status = SUSPENDED
            self._enqueue(rank)
        elif kind == EV_RESUME_DONE:
            self._transit_remove(rank)
            job.overhead_gpu_seconds += (self.now - job.transition_since) * job.num_gpus
            job.resumes += 1
            if job.prev_held:
                moved = job.prev_held != job.held
                if not moved:
                    for i in range(job.held):
                        if self.prev_of[job.offset + i] != self.gpus_of[job.offset + i]:
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
        if self.heap_n:
            t = self.heap[0].time
        if self.next_arrival < self.num_jobs and self.jobs[self.next_arrival].arrival < t:
            t = self.jobs[self.next_arrival].arrival
        return t

    cdef void _sim_advance(self) except *:
        cdef double t = self._next_event_time()
        cdef Entry top
        cdef Job* job
        if t == INFINITY:
            raise RuntimeError(
                f"advance(): no event left and {self.queue_n} job(s) waiting"
            )
        self.now = t
        self.events_n = 0
        while True:
            self._drop_stale()
            if self.heap_n and self.heap[0].time <= t:
                top = self.heap[0]
                self._pop()
                self._handle(top.kind, top.job)
            elif self.next_arrival < self.num_jobs and self.jobs[self.next_arrival].arrival <= t:
                job = &self.jobs[self.next_arrival]
                job.status = PENDING
                self.in_system += 1
                self._enqueue(self.next_arrival)
                self._add_event(EV_ARRIVAL, self.next_arrival)
                self.next_arrival += 1
            else:
                break
        self.events_processed += self.events_n
        self._record()

    # ================================================================ placement
    cdef int _find_placement(self, int rank, int strategy, int* out) except -2:
        """GPUs (sorted, into ``out``) the strategy gives the job now; their count or -1."""
        cdef Job* job = &self.jobs[rank]
        cdef int n = job.num_gpus
        cdef int g, best_g
        cdef double memory = job.memory, score, best
        if strategy == S_EXCLUSIVE:
            return self._exclusive(n, memory, out)
        if n > 1:
            return self._shared_gang(strategy, n, memory, out)
        if self.indexed:
            best_g = self._indexed_single(strategy, memory)
            if best_g < 0:
                return -1
            out[0] = best_g
            return 1
        best = INFINITY
        best_g = -1
        for g in range(self.num_gpus):
            score = self._score(strategy, g, memory)
            if score < best:
                best = score
                best_g = g
        if best_g < 0:
            return -1
        out[0] = best_g
        return 1

    cdef inline void _holders_changed(self, int g, long before) noexcept:
        """Keep the placement index after GPU ``g``'s worker count changed from ``before``."""
        cdef long after = self.holders[g]
        cdef int node = self.gpu_node[g], last
        cdef bint was_open = 0 < before < self.max_jobs, is_open = 0 < after < self.max_jobs
        if before == 0 and after > 0:
            self.idle_on_node[node] -= 1
            self.idle_total -= 1
        elif before > 0 and after == 0:
            self.idle_on_node[node] += 1
            self.idle_total += 1
        if is_open and not was_open:
            self.open_pos[g] = self.open_n
            self.open_list[self.open_n] = g
            self.open_n += 1
        elif was_open and not is_open:
            last = self.open_list[self.open_n - 1]
            self.open_list[self.open_pos[g]] = last
            self.open_pos[last] = self.open_pos[g]
            self.open_pos[g] = -1
            self.open_n -= 1

    cdef int _first_idle(self, int min_count) noexcept:
        """The lowest idle GPU of the first node with the fewest idle GPUs (at least
        ``min_count``; 0: any node with one), or -1 (needs ``indexed``)."""
        cdef int node, col, g, best_node = -1, best_count = self.num_gpus + 1
        cdef int count
        for node in range(self.num_nodes):
            count = self.idle_on_node[node]
            if count > 0 and count >= min_count and (min_count == 0 or count < best_count):
                best_node = node
                best_count = count
                if min_count == 0:
                    break
        if best_node < 0:
            return -1
        for col in range(self.node_width):
            g = self.node_gpus[best_node * self.node_width + col]
            if g >= 0 and self.holders[g] == 0:
                return g
        return -1  # unreachable: the node has an idle GPU

    cdef int _indexed_single(self, int strategy, double memory) noexcept:
        """``find_placement`` of one worker from the index: every idle GPU scores alike
        (equal memories), so the lowest one stands for all; then the open GPUs.  Ties go
        to the lower GPU, as ``np.argmin``'s first minimum."""
        cdef int i, g, best_g = -1
        cdef double score, best = INFINITY
        if self.idle_total and self.capacity[0] + EPS >= memory:
            best_g = self._first_idle(0)
            best = self._score(strategy, best_g, memory)
        for i in range(self.open_n):
            g = self.open_list[i]
            score = self._score(strategy, g, memory)
            if score < best or (score == best and score != INFINITY and g < best_g):
                best = score
                best_g = g
        return best_g if best != INFINITY else -1

    cdef inline double _score(self, int strategy, int g, double memory) noexcept:
        """``find_placement``'s score of GPU ``g`` (+inf where the worker does not fit)."""
        cdef double free_gib = self.free_mem[g], before, after, left
        cdef long held = self.holders[g]
        cdef int max_jobs = self.max_jobs
        if not (free_gib + EPS >= memory and held < max_jobs):
            return INFINITY
        if strategy == S_PACK:
            return (free_gib - memory) + (IDLE_PENALTY if held == 0 else 0.0)
        if strategy == S_SPREAD:
            return self.load[g] + 0.01 * held
        before = free_gib if held >= max_jobs else free_gib * (
            1.0 - <double>upper_bound(self.reference, self.num_reference, free_gib + EPS)
            / <double>self.num_reference
        )
        left = free_gib - memory
        after = left if held + 1 >= max_jobs else left * (
            1.0 - <double>upper_bound(self.reference, self.num_reference, left + EPS)
            / <double>self.num_reference
        )
        return (after - before) + 1e-3 * (free_gib - memory)

    cdef int _shared_gang(self, int strategy, int n, double memory, int* out) noexcept:
        """``_select`` of ``find_placement`` for a gang of ``n`` workers on shared GPUs:
        the node whose ``n`` lowest scores sum least, else the fewest nodes."""
        cdef int width = self.node_width, node, col, g, total = 0, taken, count, best_node = -1
        cdef double best_total = INFINITY, node_total
        cdef double* score = self.scratch_score
        cdef double* row = self.scratch_row
        cdef int* cols = self.scratch_cols
        cdef int* per_node = self.scratch_nodes
        for g in range(self.num_gpus):
            score[g] = self._score(strategy, g, memory)
        memset(per_node, 0, self.num_nodes * sizeof(int))
        for node in range(self.num_nodes):
            for col in range(width):
                g = self.node_gpus[node * width + col]
                if g >= 0 and score[g] != INFINITY:
                    per_node[node] += 1
            total += per_node[node]
        if n <= width:
            for node in range(self.num_nodes):
                self._node_order(node, score, row, cols)
                node_total = pairwise_sum(row, n)
                if node_total < best_total:  # np.argmin: the first smallest, finite only
                    best_total = node_total
                    best_node = node
            if best_node >= 0:
                self._node_order(best_node, score, row, cols)
                for col in range(n):
                    out[col] = self.node_gpus[best_node * width + cols[col]]
                self._sort(out, n)
                return n
        if total < n:
            return -1
        # across nodes: the nodes with the most fitting GPUs first (ties: lower node)
        taken = 0
        for count in range(width, 0, -1):
            for node in range(self.num_nodes):
                if per_node[node] != count:
                    continue
                self._node_order(node, score, row, cols)
                for col in range(min(count, n - taken)):
                    out[taken] = self.node_gpus[node * width + cols[col]]
                    taken += 1
                if taken == n:
                    self._sort(out, n)
                    return n
        return -1  # unreachable when total >= n

    cdef void _node_order(self, int node, double* score, double* row, int* cols) noexcept:
        """A node's GPU scores (+inf for padding) sorted, stable: ``row`` and ``cols``."""
        cdef int width = self.node_width, col, j, g
        cdef double value
        for col in range(width):
            g = self.node_gpus[node * width + col]
            value = score[g] if g >= 0 else INFINITY
            j = col - 1
            while j >= 0 and row[j] > value:  # insertion sort: equal values keep their order
                row[j + 1] = row[j]
                cols[j + 1] = cols[j]
                j -= 1
            row[j + 1] = value
            cols[j + 1] = col

    cdef int _exclusive(self, int n, double memory, int* out) noexcept:
        """``find_placement("exclusive", ...)``: idle GPUs, best-fit node, else fewest nodes."""
        cdef int g, node, best_node, best_count, count, taken, total = 0
        cdef int* per_node = self.scratch_nodes
        cdef int width = self.node_width
        if self.indexed:  # equal memories: an idle GPU fits iff the capacity does
            if self.capacity[0] + EPS < memory or self.idle_total < n:
                return -1
            if n == 1:
                out[0] = self._first_idle(1)
                return 1
            per_node = self.idle_on_node
            total = self.idle_total
        else:
            memset(per_node, 0, self.num_nodes * sizeof(int))
            for g in range(self.num_gpus):
                if self.holders[g] == 0 and self.free_mem[g] + EPS >= memory:
                    per_node[self.gpu_node[g]] += 1
                    total += 1
        if total < n:
            return -1
        if n == 1:
            best_count = self.num_gpus + 1
            best_node = -1
            for g in range(self.num_gpus):
                if self.holders[g] == 0 and self.free_mem[g] + EPS >= memory:
                    if per_node[self.gpu_node[g]] < best_count:
                        best_count = per_node[self.gpu_node[g]]
                        out[0] = g
            return 1
        if n <= width:
            best_node = -1
            best_count = self.num_gpus + 1
            for node in range(self.num_nodes):
                if n <= per_node[node] < best_count:
                    best_count = per_node[node]
                    best_node = node
            if best_node >= 0:
                taken = self._take_idle(best_node, n, memory, out, 0)
                self._sort(out, taken)
                return taken
        # across nodes: the nodes with the most fitting GPUs first (ties: lower node)
        taken = 0
        for count in range(width, 0, -1):
            for node in range(self.num_nodes):
                if per_node[node] == count:
                    taken = self._take_idle(node, min(count, n - taken), memory, out, taken)
                    if taken == n:
                        self._sort(out, taken)
                        return taken
        return -1

    cdef int _take_idle(self, int node, int k, double memory, int* out, int taken) noexcept:
        cdef int col, g, got = 0
        for col in range(self.node_width):
            if got == k:
                break
            g = self.node_gpus[node * self.node_width + col]
            if g >= 0 and self.holders[g] == 0 and self.free_mem[g] + EPS >= memory:
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

    # ================================================================ encoder
    cdef void _refresh_gpus(self) noexcept:
        cdef int i, g, new, old, k
        cdef double free_gib, load
        cdef long held
        cdef float* row
        if self.dirty_n:
            self.gpu_epoch += 1
        for i in range(self.dirty_n):
            g = self.dirty_list[i]
            self.dirty[g] = False
            free_gib = self.free_mem[g]
            held = self.holders[g]
            load = self.load[g]
            if self.has_encoder:
                row = &self.buffer[self.gpu_at + g * self.num_gpu_f]
                row[self.cg_free] = <float>(
                    free_gib * self.inv_capacity[g] if free_gib > 0.0 else 0.0
                )
                row[self.cg_load] = <float>(load * self.inv_slots if load > 0.0 else 0.0)
                row[self.cg_workers] = <float>(held * self.inv_slots)
            if held == 0:
                new = 0
            elif held >= self.max_jobs:
                new = self.num_frag - 1
            else:
                new = upper_bound(self.frag_edges, self.num_frag_edges, free_gib) + 1
            old = self.category[g]
            if new != old:
                self.category[g] = new
                self.category_counts[old] -= 1
                self.category_counts[new] += 1
                if self.has_encoder:
                    self.buffer[self.frag_at + old] = <float>(
                        self.category_counts[old] * self.inv_gpus
                    )
                    self.buffer[self.frag_at + new] = <float>(
                        self.category_counts[new] * self.inv_gpus
                    )
                if new == 0:
                    self.idle_gpus += 1
                elif old == 0:
                    self.idle_gpus -= 1
            if held < self.max_jobs:
                new = upper_bound(self.mem_values, self.num_mem_values, free_gib + EPS)
            else:
                new = 0
            old = self.level[g]
            if new != old:
                self.level[g] = new
                if new > old:
                    for k in range(old, new):
                        self.fit_counts[k] += 1
                else:
                    for k in range(new, old):
                        self.fit_counts[k] -= 1
        self.dirty_n = 0

    cdef void _update_mask(self) except *:
        cdef int i, slot, n, rank, width = self.W * NUM_STRATEGIES
        cdef bint exclusive, shared, schedule_choice = False, can_suspend = False
        cdef Job* job
        self._refresh_gpus()
        self.pending_n = self.queue_n if self.queue_n < self.W else self.W
        memset(self.mask, 0, self.num_actions * sizeof(cnp.npy_bool))
        for slot in range(self.pending_n):
            rank = self.queue[slot]
            self.window_pending[slot] = rank
            job = &self.jobs[rank]
            n = job.num_gpus
            exclusive = n <= self.idle_gpus
            if exclusive and not self.equal_capacity:
                exclusive = self._exclusive_memory_ok(job)
            shared = n <= self.fit_counts[job.size_index]
            # exclusive needs idle GPUs; the three sharing strategies need fragments
            self.mask[NUM_STRATEGIES * slot + S_EXCLUSIVE] = exclusive
            self.mask[NUM_STRATEGIES * slot + S_PACK] = shared
            self.mask[NUM_STRATEGIES * slot + S_SPREAD] = shared
            self.mask[NUM_STRATEGIES * slot + S_MIN_FRAG] = shared
            if exclusive or shared:
                schedule_choice = True
        self.running_n_window = self.running_n if self.running_n < self.R else self.R
        for slot in range(self.running_n_window):
            rank = self.running[slot]
            self.window_running[slot] = rank
            if self._suspendable(&self.jobs[rank]):
                self.mask[width + slot] = True
                can_suspend = True
        self.can_advance = (
            self.running_n_window > 0
            or self.transit_n > 0
            or self.in_system + self.finished_n < self.num_jobs
        )
        self.mask[self.num_actions - 1] = self.can_advance
        self.has_choice = schedule_choice or can_suspend

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
        if job.memory <= self.min_capacity + EPS:
            return True
        count = self._exclusive(job.num_gpus, job.memory, self.scratch_gpus)
        if count < 0:
            return False
        for i in range(count):
            if not self.free_mem[self.scratch_gpus[i]] + EPS >= job.memory:
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
        row[self.cj_valid] = 1.0
        row[self.cj_gpus] = <float>(log2(1.0 + job.num_gpus) * self.log_gpus)
        row[self.cj_memory] = <float>(job.memory / self.max_capacity)
        row[self.cj_intensity] = <float>job.intensity
        for m in range(self.num_models):
            row[self.cj_model0 + m] = 0.0
        if job.model >= 0:
            row[self.cj_model0 + job.model] = 1.0

    cdef void _observe(self) except *:
        cdef int slot, rank, c
        cdef float* row
        cdef Job* job
        cdef double now = self.now, value, done, left, step, predicted, backlog
        cdef double util, free_share, fragmented, expected, waiting_gpus, t
        cdef bint known
        # pending rows
        for slot in range(self.W):
            row = &self.buffer[self.pending_at + slot * self.num_pw]
            if slot >= self.pending_n:
                memset(row, 0, self.num_pw * sizeof(float))
                continue
            job = &self.jobs[self.window_pending[slot]]
            self._job_row(row, job)
            value = log10(now - (job.queued_since - 1.0)) * INV_DECADES
            row[self.cj_wait] = <float>(value if value < 1.0 else 1.0)
            row[self.cj_sampled] = 1.0 if job.sampled else 0.0
            predicted = self._predicted_remaining(job, &known)
            row[self.cj_known] = 1.0 if known else 0.0
            row[self.cj_predicted] = <float>(log_time(predicted) if known else 0.0)
            row[self.cj_suspended] = 1.0 if job.status == SUSPENDED else 0.0
            row[self.cj_progress] = <float>(job.progress / job.iterations)
        # running rows
        for slot in range(self.R):
            row = &self.buffer[self.running_at + slot * self.num_r]
            if slot >= self.running_n_window:
                memset(row, 0, self.num_r * sizeof(float))
                continue
            job = &self.jobs[self.window_running[slot]]
            self._job_row(row, job)
            step = self._measured_step(job, &known)
            row[self.cj_wait] = <float>log_time(job.queued_s)
            row[self.cj_sampled] = 1.0 if job.sampled else 0.0
            row[self.cj_known] = 1.0 if known else 0.0
            done = job.progress + job.rate * (now - job.last_update)
            if done > job.iterations:
                done = job.iterations
            left = log10(1.0 + (job.iterations - done) * step) * INV_DECADES
            row[self.cj_predicted] = <float>(left if left < 1.0 else 1.0)
            row[self.cj_suspended] = 0.0
            row[self.cj_progress] = <float>(done / job.iterations)
            value = job.speed * self.inv_max_speed
            row[self.cr_speed] = <float>(value if value < 1.0 else 1.0)
            if self.cr_held >= 0:
                row[self.cr_held] = <float>log_time(now - job.held_since)
        # global
        row = &self.buffer[self.global_at]
        t = log10(1.0 + now) * INV_DECADES
        row[self.cl_time] = <float>(t if t < 1.0 else 1.0)
        row[self.cl_waiting] = <float>(self.queue_n * self.inv_jobs)
        backlog = self.queue_n - self.W
        row[self.cl_backlog] = <float>(backlog * self.inv_jobs if backlog > 0 else 0.0)
        row[self.cl_running] = <float>(self.running_n * self.inv_jobs)
        row[self.cl_transition] = <float>(self.transit_n * self.inv_jobs)
        row[self.cl_in_system] = <float>(self.in_system * self.inv_jobs)
        row[self.cl_finished] = <float>(self.finished_n * self.inv_jobs)
        util = self.util_sum * self.inv_gpus
        free_share = self.free_sum * self.inv_total_memory
        if self.free_sum > EPS:
            fragmented = self.frag_sum / self.free_sum
            expected = self.fgd_sum / self.free_sum
        else:
            fragmented = expected = 0.0
        waiting_gpus = self.waiting_gpus * self.inv_gpus
        row[self.cl_util] = <float>clip01(util)
        row[self.cl_alloc] = <float>(self.allocated * self.inv_gpus)
        row[self.cl_free] = <float>clip01(free_share)
        row[self.cl_frag] = <float>clip01(fragmented)
        row[self.cl_expected] = <float>clip01(expected)
        row[self.cl_waiting_gpus] = <float>(waiting_gpus if waiting_gpus < 1.0 else 1.0)
        row[self.cl_idle] = <float>(self.idle_gpus * self.inv_gpus)
        row[self.cl_advance] = 1.0 if self.can_advance else 0.0
        if self.cp_pack >= 0 or self.cr_shares >= 0:
            self._observe_placement()
        if self.cr_rival >= 0:
            self._observe_rivals()
        if self.cp_drain >= 0 or self.cr_drain >= 0:
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
        if self.dirty_n:  # GPUs changed since the mask last refreshed them (not in env steps)
            self.gpu_epoch += 1
        for slot in range(self.pending_n if self.cp_pack >= 0 else 0):
            rank = self.window_pending[slot]
            job = &self.jobs[rank]
            shape = self.shape_of[rank]
            if self.shape_epoch[shape] != self.gpu_epoch:
                self.shape_epoch[shape] = self.gpu_epoch
                self.shape_peak[2 * shape] = self._peak_load(rank, S_PACK)
                self.shape_peak[2 * shape + 1] = self._peak_load(rank, S_SPREAD)
            row = &self.buffer[self.pending_at + slot * self.num_pw + self.cp_pack]
            for s in range(2):
                peak = self.shape_peak[2 * shape + s]
                if peak == INFINITY:
                    row[s] = 0.0
                    continue
                peak = (peak + job.intensity) * self.inv_slots
                row[s] = <float>(peak if peak < 1.0 else 1.0)
        for slot in range(self.running_n_window if self.cr_shares >= 0 else 0):
            job = &self.jobs[self.window_running[slot]]
            shares = False
            for i in range(job.held):
                if self.holders[self.gpus_of[job.offset + i]] > 1:
                    shares = True
                    break
            row = &self.buffer[self.running_at + slot * self.num_r + self.cr_shares]
            row[0] = 1.0 if shares else 0.0

    cdef double _peak_load(self, int rank, int strategy) except? -1.0:
        """The largest load on the GPUs ``strategy`` gives the job now (+inf: none fit)."""
        cdef int* gpus = self.scratch_gpus
        cdef int i, count = self._find_placement(rank, strategy, gpus)
        cdef double peak
        if count < 0:
            return INFINITY
        peak = self.load[gpus[0]]
        for i in range(1, count):
            if self.load[gpus[i]] > peak:
                peak = self.load[gpus[i]]
        return peak

    cdef void _observe_rivals(self) noexcept:
        """The ``rival_wait`` / ``rival_remaining`` columns: one pass over the whole queue,
        by GPUs requested."""
        cdef int i, slot, n
        cdef long seen = self.rival_pass + 1
        cdef double now = self.now, wait, predicted
        cdef bint known
        cdef float* row
        cdef Job* job
        self.rival_pass = seen
        for i in range(self.queue_n):
            job = &self.jobs[self.queue[i]]
            n = job.num_gpus
            wait = now - job.queued_since
            if self.rival_seen[n] != seen:
                self.rival_seen[n] = seen
                self.rival_wait[n] = wait
                self.rival_left[n] = INFINITY
            elif wait > self.rival_wait[n]:
                self.rival_wait[n] = wait
            predicted = self._predicted_remaining(job, &known)
            if known and predicted < self.rival_left[n]:
                self.rival_left[n] = predicted
        for slot in range(self.running_n_window):
            n = self.jobs[self.window_running[slot]].num_gpus
            row = &self.buffer[self.running_at + slot * self.num_r + self.cr_rival]
            if self.rival_seen[n] != seen:
                row[0] = 0.0
                row[1] = 0.0
                continue
            row[0] = <float>log_time(self.rival_wait[n])
            predicted = self.rival_left[n]
            row[1] = <float>(0.0 if predicted == INFINITY else log_time(predicted))

    cdef void _observe_drain(self) noexcept:
        """The ``drain_share`` columns (the sum runs waiting, running, in transition)."""
        cdef int slot
        cdef double drain = self._predicted_work() * self.inv_gpus, left
        cdef bint known
        for slot in range(self.pending_n if self.cp_drain >= 0 else 0):
            left = self._predicted_remaining(&self.jobs[self.window_pending[slot]], &known)
            self.buffer[self.pending_at + slot * self.num_pw + self.cp_drain] = <float>(
                left / (left + drain) if known and left != 0.0 else 0.0
            )
        for slot in range(self.running_n_window if self.cr_drain >= 0 else 0):
            left = self._predicted_remaining(&self.jobs[self.window_running[slot]], &known)
            self.buffer[self.running_at + slot * self.num_r + self.cr_drain] = <float>(
                left / (left + drain) if known and left != 0.0 else 0.0
            )

    # ================================================================ env
    cdef bint _time_capped(self) noexcept:
        return self.has_time_cap and self.now >= self.max_time

    cdef void _advance(self) except *:
        cdef double t0 = self.now, dt, scaled, waits
        cdef int in_system = self.in_system, waiting = self.queue_n, i, kind, rank
        cdef double compute_in_use = self.util_sum, progress = 0.0
        cdef Job* job
        if self.weights[T_DELAY] != 0.0:  # solo-seconds of work done per second
            for i in range(self.running_n):
                job = &self.jobs[self.running[i]]
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
            self.terms[T_UTIL] += compute_in_use * self.inv_gpus * scaled
            self.terms[T_SLOWDOWN] -= self.inv_solo_sum * dt
            if waiting:
                waits = waiting * t0 - self.queued_since_sum
                self.terms[T_STARVATION] -= scaled * (waits + 0.5 * waiting * dt) * self.inv_scale
            self.terms[T_OVERHEAD] -= self.transition_gpus * scaled
        for i in range(self.events_n):
            kind = self.events_kind[i]
            rank = self.events_job[i]
            job = &self.jobs[rank]
            if kind == EV_ARRIVAL:
                self.arrived = True
                self.inv_solo_sum += self.inv_solo[rank]
                self.queued_since_sum += job.queued_since
                self.waiting_gpus += job.num_gpus
            elif kind == EV_FINISH:
                self.inv_solo_sum -= self.inv_solo[rank]
                if self.in_system == 0:
                    self.inv_solo_sum = 0.0  # no drift across busy periods
            elif kind == EV_SUSPEND_DONE:
                self.transition_gpus -= job.num_gpus
                self.queued_since_sum += job.queued_since
                self.waiting_gpus += job.num_gpus
            elif kind == EV_RESUME_DONE:
                self.transition_gpus -= job.num_gpus

    cdef void _apply(self, int action) except *:
        cdef int slot, strategy, rank, count
        cdef Job* job
        cdef bint resuming
        cdef double queued_since
        if action == self.num_actions - 1:
            self._advance()
            return
        if action < self.W * NUM_STRATEGIES:
            slot = action // NUM_STRATEGIES
            strategy = action % NUM_STRATEGIES
            rank = self.window_pending[slot]
            job = &self.jobs[rank]
            resuming = job.status == SUSPENDED
            queued_since = job.queued_since
            count = self._find_placement(rank, strategy, self.scratch_gpus)
            if count < 0:  # pragma: no cover - the mask is exact (tested)
                raise RuntimeError(f"schedule action {action}: the job does not fit")
            self._occupy(rank, self.scratch_gpus, count)
            self.queued_since_sum -= queued_since
            if self.queue_n == 0:
                self.queued_since_sum = 0.0  # no drift across queue stints
            self.waiting_gpus -= job.num_gpus
            if resuming:
                self.transition_gpus += job.num_gpus
            return
        rank = self.window_running[action - self.W * NUM_STRATEGIES]
        self._suspend(rank)
        self.transition_gpus += self.jobs[rank].num_gpus

    cdef void _settle(self) except *:
        self._update_mask()
        if self.auto_advance:
            while not self.has_choice and self.can_advance and not self._time_capped():
                self._advance()
                self._update_mask()
        self.deadlock = not (
            self.finished_n == self.num_jobs or self.has_choice or self.can_advance
        )

    # ------------------------------------------------------------ Python API
    def start(self):
        """Settle the first decision point (what ``reset`` does); time before it is free."""
        if not self.has_encoder:
            raise RuntimeError("this core is headless: it has no observation encoder")
        self.ops.append(None)
        self._settle()
        memset(self.terms, 0, sizeof(self.terms))
        self._observe()

    def step(self, int action, bint invalid):
        """One env step: apply ``action`` (unless ``invalid``), settle, observe.

        Returns:
            ``(reward, terminated, truncated)``.
        """
        cdef int i
        cdef double reward = 0.0
        cdef bint terminated, truncated
        memset(self.terms, 0, sizeof(self.terms))
        self.ops.append(action if not invalid else -1)  # an invalid action is a no-op
        if not invalid:
            self._apply(action)
        else:
            self.terms[T_INVALID] = -self.invalid_penalty
        self.decisions += 1
        if not invalid:
            self._settle()
        terminated = self.finished_n == self.num_jobs
        truncated = False
        if not terminated:
            # the first cap that holds is the reason (runner.TruncatedBy)
            if self.decisions >= self.decision_cap:
                self.truncated_by = "decisions"
            elif self._time_capped():
                self.truncated_by = "time"
            elif self.deadlock:
                self.truncated_by = "deadlock"
            truncated = self.truncated_by is not None
        if truncated:  # running out the clock is no way out: charge what is left
            jct_left, makespan_left = self.truncation_cost()
            self.terms[T_JCT] -= jct_left * self.inv_scale
            self.terms[T_DELAY] -= (jct_left - self._work_left()) * self.inv_scale
            self.terms[T_MAKESPAN] -= makespan_left * self.inv_scale
        for i in range(NUM_TERMS):
            if self.weights[i] != 0.0:
                reward += self.weights[i] * self.terms[i]
        self._observe()
        return reward, terminated, truncated

    @property
    def done(self):
        return self.finished_n == self.num_jobs

    @property
    def num_finished(self):
        return self.finished_n

    @property
    def num_waiting(self):
        return self.queue_n

    @property
    def num_running(self):
        return self.running_n

    def can_suspend(self, job_id):
        """True if the suspension rules allow suspending job ``job_id`` now (running, under
        ``max_suspends_per_job``, past ``min_service_s`` since a resume): what the mask
        encodes for the running window."""
        return self._suspendable(&self.jobs[self._rank(job_id)])

    def suspend_refusal(self, job_id):
        """Why job ``job_id`` may not be suspended now (``None``: it may)."""
        cdef Job* job = &self.jobs[self._rank(job_id)]
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
        for rank in range(self.num_jobs):  # ranks are in arrival order
            job = &self.jobs[rank]
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
        for rank in range(self.num_jobs):
            job = &self.jobs[rank]
            if job.status != FINISHED:
                left += (job.iterations - self._done(job)) * job.step_time
        return left

    def is_valid(self, long action):
        """True if ``action`` is in the action space and the mask allows it now."""
        return 0 <= action < self.num_actions and self.mask[action]

    def reward_terms(self, names):
        """The reward components of the last step: a dict from ``names`` (the
        ``REWARD_COMPONENTS`` order) to their values."""
        cdef dict out = {}
        cdef int i
        for i in range(NUM_TERMS):
            out[names[i]] = self.terms[i]
        return out

    def pending_ids(self):
        """Job ids of the pending window."""
        return [self.jobs[self.window_pending[i]].job_id for i in range(self.pending_n)]

    def running_ids(self):
        """Job ids of the running window."""
        return [self.jobs[self.window_running[i]].job_id for i in range(self.running_n_window)]

    def timeline_rows(self):
        """The timeline as a ``(T, 8)`` float64 array (``Simulator.timeline`` columns)."""
        out = np.empty((self.timeline_n, 8))
        cdef double* dst = <double*>cnp.PyArray_DATA(out)
        memcpy(dst, self.timeline, self.timeline_n * 8 * sizeof(double))
        return out

    def finished_jobs(self):
        """One tuple per finished job, in finishing order: the ``JobRecord`` fields
        ``(job_id, first_start_s, finish_s, gpu_seconds, overhead_gpu_seconds, suspends,
        resumes, migrations, queued_s)``."""
        cdef Job* job
        rows = []
        for i in range(self.finished_n):
            job = &self.jobs[self.finished[i]]
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
        cdef int i, n = self.queue_n if limit is None else min(self.queue_n, max(limit, 0))
        return [self.jobs[self.queue[i]].job_id for i in range(n)]

    def running_list(self, limit=None):
        """Ids of running jobs in the order they (re)started, at most ``limit``."""
        cdef int i, n = self.running_n if limit is None else min(self.running_n, max(limit, 0))
        return [self.jobs[self.running[i]].job_id for i in range(n)]

    def transition_list(self):
        """Ids of jobs suspending or resuming, in the order they began."""
        cdef int i
        return [self.jobs[self.transit[i]].job_id for i in range(self.transit_n)]

    def jobs_on_gpu(self, int gpu):
        """Ids of the jobs holding memory on ``gpu``, in the order they came."""
        cdef int i
        if not 0 <= gpu < self.num_gpus:
            raise IndexError(f"GPU {gpu} does not exist (cluster has {self.num_gpus})")
        return [
            self.jobs[self.gpu_jobs[gpu * self.max_jobs + i]].job_id
            for i in range(self.gpu_jobs_n[gpu])
        ]

    def next_event_time(self):
        """Time of the next event, or ``None`` when nothing is left to happen."""
        cdef double t = self._next_event_time()
        return None if t == INFINITY else t

    def progress_of(self, job_id):
        """Iterations done by ``job_id`` as of now."""
        return self._done(&self.jobs[self.rank_of[job_id]])

    def predicted_remaining_s(self, job_id):
        """Remaining solo time as schedulers may know it (``None`` when unknown)."""
        cdef bint known
        cdef double value = self._predicted_remaining(&self.jobs[self.rank_of[job_id]], &known)
        return value if known else None

    def measured_step_time_s(self, job_id):
        """Measured solo step time (``None`` before sampling, or if info is none)."""
        cdef bint known
        cdef double value = self._measured_step(&self.jobs[self.rank_of[job_id]], &known)
        return value if known else None

    def predicted_work_s(self):
        """Sum of ``predicted remaining x GPUs`` over the jobs in the system: waiting, then
        running, then in transition (jobs without a prediction count 0).  [GPU s]"""
        return self._predicted_work()

    cdef double _predicted_work(self) noexcept:
        cdef double work = 0.0, value
        cdef bint known
        cdef int i
        cdef Job* job
        for i in range(self.queue_n):
            job = &self.jobs[self.queue[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        for i in range(self.running_n):
            job = &self.jobs[self.running[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        for i in range(self.transit_n):
            job = &self.jobs[self.transit[i]]
            value = self._predicted_remaining(job, &known)
            if known:
                work += value * job.num_gpus
        return work

    def find_placement(self, job_id, strategy):
        """GPUs the named strategy would give ``job_id`` now (sorted), or ``None``."""
        cdef int i, count
        cdef int rank = self.rank_of[job_id]
        count = self._find_placement(rank, self._strategy_index(job_id, strategy), self.scratch_gpus)
        if count < 0:
            return None
        return tuple([self.scratch_gpus[i] for i in range(count)])

    cdef int _strategy_index(self, job_id, strategy) except -1:
        try:
            return self.strategy_names.index(strategy)
        except ValueError:
            raise InvalidDecision(
                f"job {job_id}: unknown strategy {strategy!r}; "
                f"allowed: {list(self.strategy_names)}"
            ) from None

    cdef Job* _waiting(self, job_id) except NULL:
        cdef Job* job = &self.jobs[self._rank(job_id)]
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
        count = self._find_placement(rank, index, self.scratch_gpus)
        if count < 0:
            raise InvalidDecision(
                f"job {job_id}: {job.num_gpus} worker(s) of {job.memory:g} GiB do not "
                f"fit now with strategy {strategy!r}"
            )
        gpus = tuple([self.scratch_gpus[i] for i in range(count)])
        self.ops.append(("schedule", job_id, strategy))
        self._occupy(rank, self.scratch_gpus, count)
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
        if len(gpu_list) != job.num_gpus:
            raise InvalidDecision(
                f"job {job_id}: needs {job.num_gpus} GPU(s), got {len(gpu_list)}: {gpu_list}"
            )
        if len(set(gpu_list)) != len(gpu_list):
            raise InvalidDecision(f"job {job_id}: GPUs must be distinct, got {gpu_list}")
        for g in gpu_list:
            if not 0 <= g < self.num_gpus:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} does not exist (cluster has {self.num_gpus})"
                )
            if self.free_mem[g] + EPS < job.memory:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} has {self.free_mem[g]:.2f} GiB free, "
                    f"a worker needs {job.memory:g} GiB (memory)"
                )
            if self.holders[g] >= self.max_jobs:
                raise InvalidDecision(
                    f"job {job_id}: GPU {g} already hosts {self.max_jobs} workers "
                    "(max_jobs_per_gpu)"
                )
        for i in range(job.num_gpus):
            self.scratch_gpus[i] = gpu_list[i]
        self.ops.append(("place", job_id, gpu_list))
        self._occupy(self.rank_of[job_id], self.scratch_gpus, job.num_gpus)

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
                + (f" and {self.queue_n} job(s) waiting: place them first" if self.queue_n else "")
            )
        self.ops.append("advance")
        self._sim_advance()
        kinds = _EVENT_KINDS
        now = self.now
        return [
            Event(now, kinds[self.events_kind[i]], self.jobs[self.events_job[i]].job_id)
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
        return self.util_sum, self.allocated, self.free_sum, self.frag_sum, self.fgd_sum

    # ------------------------------------------------------------- pickling
    def __reduce__(self):
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
            elif op[0] == "place":
                self.place(op[1], op[2])
            elif op[0] == "schedule":
                self.schedule(op[1], op[2])
            else:
                self.suspend(op[1])



cdef class JobState:
    """The state of one job inside the simulator (read-only; policies see a ``JobView``).

    A proxy over the core's C record: every attribute reads the current value.
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
        """The immutable job description."""
        return self.core.specs[self.rank]

    @property
    def job_id(self):
        return self.core.jobs[self.rank].job_id

    @property
    def noise(self):
        """Relative measurement error of the sampled step time."""
        return self.core.jobs[self.rank].noise

    @property
    def suspend_overhead_s(self):
        return self.core.jobs[self.rank].suspend_overhead

    @property
    def resume_overhead_s(self):
        return self.core.jobs[self.rank].resume_overhead

    @property
    def cross_node_factor(self):
        return self.core.jobs[self.rank].cross_factor

    @property
    def status(self):
        return _STATUSES[self.core.jobs[self.rank].status]

    @property
    def progress(self):
        """Iterations done as of ``last_update_s``."""
        return self.core.jobs[self.rank].progress

    @property
    def last_update_s(self):
        return self.core.jobs[self.rank].last_update

    @property
    def rate(self):
        """Iterations per second now."""
        return self.core.jobs[self.rank].rate

    @property
    def speed(self):
        """Current rate / solo-exclusive rate."""
        return self.core.jobs[self.rank].speed

    @property
    def gpus(self):
        """GPUs held now, sorted (empty when it holds none)."""
        cdef Job* job = &self.core.jobs[self.rank]
        cdef int i
        return tuple([self.core.gpus_of[job.offset + i] for i in range(job.held)])

    @property
    def prev_gpus(self):
        """GPUs it held before its last release."""
        cdef Job* job = &self.core.jobs[self.rank]
        cdef int i
        return tuple([self.core.prev_of[job.offset + i] for i in range(job.prev_held)])

    @property
    def version(self):
        return self.core.jobs[self.rank].version

    @property
    def first_start_s(self):
        return self.core.jobs[self.rank].first_start

    @property
    def finish_s(self):
        return self.core.jobs[self.rank].finish

    @property
    def held_since_s(self):
        return self.core.jobs[self.rank].held_since

    @property
    def gpu_seconds(self):
        return self.core.jobs[self.rank].gpu_seconds

    @property
    def overhead_gpu_seconds(self):
        return self.core.jobs[self.rank].overhead_gpu_seconds

    @property
    def transition_since_s(self):
        return self.core.jobs[self.rank].transition_since

    @property
    def queued_since_s(self):
        return self.core.jobs[self.rank].queued_since

    @property
    def queued_s(self):
        return self.core.jobs[self.rank].queued_s

    @property
    def suspends(self):
        return self.core.jobs[self.rank].suspends

    @property
    def resumes(self):
        return self.core.jobs[self.rank].resumes

    @property
    def migrations(self):
        return self.core.jobs[self.rank].migrations

    @property
    def sampled(self):
        return bool(self.core.jobs[self.rank].sampled)

    @property
    def cross_node(self):
        return bool(self.core.jobs[self.rank].cross_node)


cdef JobState _job_state(Core core, int rank):
    cdef JobState state = JobState.__new__(JobState)
    state.core = core
    state.rank = rank
    return state
