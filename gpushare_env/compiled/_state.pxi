# The compiled core, part 1 of 7 (included by _core.pyx after _parts.pxi): the core's
# fields, its parts and the memory it owns itself.

cdef class _State:
    """The core's state: its parts (GPU table, job table, event heap, windows, meter,
    encoder and its columns) and the simulation and env settings and counters (the
    classes after it add the behaviour, concern by concern)."""

    # ------------------------------------------------------------------ parts
    cdef readonly GpuTable gpus
    cdef readonly JobTable jobs
    cdef EventHeap events  # owns its entries (_event_heap.pxi)
    cdef readonly Windows win
    cdef readonly Meter meter
    cdef readonly Encoder enc
    cdef readonly Columns cols
    cdef ShareRules rules  # what FGD's placement rules read (the shares model)

    # -------------------------------------------------------------- simulator
    cdef public list specs  # JobSpec by rank
    cdef public dict rank_of  # job id -> rank
    cdef double alpha
    cdef bint interference
    cdef object interference_py  # a Python InterferenceModel (None: a built-in model)
    cdef bint interference_models  # it is told the models of the co-located workers
    cdef bint measured  # measured pairs (MeasuredContention): per-worker factors
    cdef double* pair_extra  # (tables, num_models, num_models) extra time, -1: not measured
    cdef int pair_extra_n  # its length
    cdef public long sim_decisions  # placements and suspensions carried out
    cdef public object inputs  # the constructor's CoreInputs (pickling rebuilds from it)
    cdef public list ops  # the episode's operations so far (pickling replays them)
    cdef readonly bint belief  # a belief fork (Core.believe): no replay of an episode
    cdef public dict spec_factor  # a belief's step-time factor (or believed spec) by rank
    cdef int sample_iterations
    cdef int duration_info
    cdef int max_suspends  # -1: no cap
    cdef double min_service  # [s] service after a resume before the next suspension
    cdef public double now
    cdef public int in_system
    cdef public long events_processed
    cdef int* events_kind  # events of the last advance
    cdef int* events_job
    cdef int events_n
    cdef int events_cap

    # -------------------------------------------------------------- env
    cdef double[NUM_TERMS] weights
    cdef double[NUM_TERMS] terms
    cdef double inv_scale
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
        self.gpus = GpuTable()
        self.jobs = JobTable()
        self.events = EventHeap(64)
        self.win = Windows()
        self.meter = Meter()
        self.enc = Encoder()
        self.cols = Columns()
        self.rules = ShareRules()

    def __dealloc__(self):
        free(self.pair_extra)
        free(self.events_kind)
        free(self.events_job)
