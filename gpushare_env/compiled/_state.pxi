# The compiled core, part 1 of 6 (included by _core.pyx): every field of the core,
# and the memory they own.

cdef class _State:
    """The core's state: jobs, GPUs, events, observation buffer, mask and reward terms
    (the fields; the classes after it add the behaviour, concern by concern)."""

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
    cdef public object inputs  # the constructor's CoreInputs (pickling rebuilds from it)
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
    cdef EventHeap events  # owns its entries (_event_heap.pxi)
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
    cdef int priority_slots  # pending slots chosen by least attained service
    cdef int* priority_pos  # their queue positions, while choosing  # (priority_slots + 1)
    cdef double* priority_key  # and their attained GPU-seconds  # (priority_slots + 1)
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
        free(self.priority_pos)
        free(self.priority_key)
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

