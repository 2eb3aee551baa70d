# The compiled core's parts (included by _core.pyx after _event_heap.pxi): the tables the
# core is made of, each owning and freeing its memory. The core holds one of each as a
# typed attribute (_state.pxi); the behaviour classes read them as self.gpus.free_cap,
# self.jobs.row[rank], ... The constructor (Core.__init__) fills them from CoreInputs.


cdef class ShareRules  # forward: Windows.set_strategies reads it
cdef class MigTable  # forward: GpuTable holds one


@cython.final
cdef class GpuTable:
    """The cluster: each GPU's capacity, speed, node, workers, free memory and load, the
    node layout, and the incremental placement index."""

    cdef readonly int num_gpus
    cdef readonly int num_nodes
    cdef readonly int node_width
    cdef readonly int max_jobs  # workers one GPU may hold
    cdef int* gpu_node
    cdef int* node_gpus  # (num_nodes, node_width), -1 padded
    cdef double* capacity
    cdef double* inv_capacity
    cdef double* gpu_speed
    cdef int* gpu_jobs  # (num_gpus, max_jobs) ranks in insertion order
    cdef int* gpu_jobs_n
    # the live per-GPU arrays, numpy-owned; the pointers write through to them
    cdef double* free_cap
    cdef double* load
    cdef long* computing
    cdef long* holders
    cdef double* factor
    cdef public object free_array, load_array, computing_array, holders_array, factor_array
    cdef public object gpu_state  # GPUState over the live arrays (what SimView reads)
    cdef bint equal_capacity
    cdef double min_capacity
    cdef double max_capacity
    # measured pairs (MeasuredContention), per GPU
    cdef int* gpu_table  # (G) each GPU's table
    cdef double* gpu_model_speed  # (G, models) each model's solo speed on each GPU
    cdef int model_speed_n  # its length (Core.__init__ sets both)
    # scratch for placements
    cdef double* scratch_row  # (node_width) a node's GPU scores, sorted
    cdef int* scratch_cols  # (node_width) their columns
    cdef int* scratch_gpus  # (num_gpus)
    cdef double* scratch_score  # (num_gpus)
    cdef int* scratch_nodes  # (num_nodes)
    cdef int chosen_node  # the node of the placement _find_placement found last
    # incremental placement index (equal GPU memories, GPUs numbered node by node): idle
    # GPUs per node and the "open" GPUs (some workers, a free slot), so that one-worker
    # placements and exclusive gangs need no pass over the cluster
    cdef bint indexed
    cdef int* idle_on_node  # (num_nodes)
    cdef int idle_total
    cdef int* open_list
    cdef int* open_pos  # (num_gpus) index in open_list, -1 if not open
    cdef int open_n
    cdef long gpu_epoch  # bumped whenever a GPU's memory, workers or load changed
    # the sharing model (gpushare_env.sim.sharing): free_cap and capacity are in its unit
    # (GiB of memory, or milli-GPU of a GPU's 1000); with node limits each node's CPU and
    # host memory and each GPU's model are limits too (unlimited: inf, any model)
    cdef readonly int sharing  # SHARING_*: the one dispatch in fit, occupy, release, encode
    cdef readonly bint one_node_gangs  # a job's GPUs are on one node
    cdef readonly bint free_capacity_fits  # a GPU's free capacity and workers tell the fit
    cdef readonly str unit  # of demand and capacity
    cdef str demand_name  # what a worker's demand is, for messages
    cdef str free_format  # how messages print a GPU's free capacity
    cdef int* gpu_model  # (num_gpus) index into the cluster's sorted GPU type names
    cdef double* node_cpu_free  # (num_nodes) [milli-cores]
    cdef double* node_mem_free  # (num_nodes) [MiB]
    cdef public object node_cpu_array, node_mem_array  # numpy owners of the two above
    cdef readonly MigTable mig  # the MIG instances (the mig model only: mig.np > 0)

    cdef void build(self, cluster_in, sim_in) except *:
        """The cluster of ``cluster_in`` (a ``ClusterInput``), every GPU idle, under the
        sharing model of ``sim_in`` (a ``SimInput``; with node limits, no incremental
        index: it ignores them)."""
        cdef int i, g
        capacity = np.ascontiguousarray(cluster_in.capacity, dtype=np.float64)
        gpu_node = np.ascontiguousarray(cluster_in.gpu_node, dtype=np.int64)
        node_gpus = np.ascontiguousarray(cluster_in.node_gpus, dtype=np.int64)
        speed = np.ascontiguousarray(cluster_in.gpu_speed, dtype=np.float64)
        self.num_gpus = g = len(capacity)
        self.num_nodes = node_gpus.shape[0]
        self.node_width = node_gpus.shape[1]
        self.max_jobs = cluster_in.max_jobs_per_gpu
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
        self.free_cap = <double*>cnp.PyArray_DATA(self.free_array)
        self.load = <double*>cnp.PyArray_DATA(self.load_array)
        self.computing = <long*>cnp.PyArray_DATA(self.computing_array)
        self.holders = <long*>cnp.PyArray_DATA(self.holders_array)
        self.factor = <double*>cnp.PyArray_DATA(self.factor_array)
        self.scratch_row = <double*>checked_malloc(self.node_width * sizeof(double))
        self.scratch_cols = <int*>checked_malloc(self.node_width * sizeof(int))
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
        self.sharing = sim_in.sharing
        self.one_node_gangs = sim_in.one_node_gangs
        self.unit = sim_in.demand_unit
        self.demand_name = sim_in.demand_name
        self.free_format = sim_in.free_format
        model = np.ascontiguousarray(cluster_in.gpu_model, dtype=np.int64)
        self.gpu_model = <int*>checked_malloc(g * sizeof(int))
        for i in range(g):
            self.gpu_model[i] = model[i]
        self.node_cpu_array = np.array(cluster_in.node_cpu_milli, dtype=np.float64)
        self.node_mem_array = np.array(cluster_in.node_memory_mib, dtype=np.float64)
        self.node_cpu_free = <double*>cnp.PyArray_DATA(self.node_cpu_array)
        self.node_mem_free = <double*>cnp.PyArray_DATA(self.node_mem_array)
        self.free_capacity_fits = sim_in.free_capacity_fits
        self.indexed = self.indexed and self.free_capacity_fits
        self.mig = MigTable.__new__(MigTable)  # Core.__init__ fills it under mig
        self.mig.rule = S_MIG_FIT

    cdef GpuTable copy(self):
        """An independent table in the same state (``Core.fork``); ``gpu_state`` is left
        for the simulator to rebuild over the new live arrays."""
        cdef GpuTable c = GpuTable.__new__(GpuTable)
        cdef int g = self.num_gpus, N = self.num_nodes, W = self.node_width
        c.num_gpus = g
        c.num_nodes = N
        c.node_width = W
        c.max_jobs = self.max_jobs
        c.gpu_node = <int*>duplicate(self.gpu_node, g * sizeof(int))
        c.node_gpus = <int*>duplicate(self.node_gpus, N * W * sizeof(int))
        c.capacity = <double*>duplicate(self.capacity, g * sizeof(double))
        c.inv_capacity = <double*>duplicate(self.inv_capacity, g * sizeof(double))
        c.gpu_speed = <double*>duplicate(self.gpu_speed, g * sizeof(double))
        c.gpu_jobs = <int*>duplicate(self.gpu_jobs, g * self.max_jobs * sizeof(int))
        c.gpu_jobs_n = <int*>duplicate(self.gpu_jobs_n, g * sizeof(int))
        c.free_array = self.free_array.copy()
        c.load_array = self.load_array.copy()
        c.computing_array = self.computing_array.copy()
        c.holders_array = self.holders_array.copy()
        c.factor_array = self.factor_array.copy()
        c.free_cap = <double*>cnp.PyArray_DATA(c.free_array)
        c.load = <double*>cnp.PyArray_DATA(c.load_array)
        c.computing = <long*>cnp.PyArray_DATA(c.computing_array)
        c.holders = <long*>cnp.PyArray_DATA(c.holders_array)
        c.factor = <double*>cnp.PyArray_DATA(c.factor_array)
        c.gpu_state = None
        c.equal_capacity = self.equal_capacity
        c.min_capacity = self.min_capacity
        c.max_capacity = self.max_capacity
        c.gpu_table = <int*>duplicate(self.gpu_table, g * sizeof(int))
        c.gpu_model_speed = <double*>duplicate(self.gpu_model_speed, self.model_speed_n * sizeof(double))
        c.model_speed_n = self.model_speed_n
        c.scratch_row = <double*>duplicate(self.scratch_row, W * sizeof(double))
        c.scratch_cols = <int*>duplicate(self.scratch_cols, W * sizeof(int))
        c.scratch_gpus = <int*>duplicate(self.scratch_gpus, g * sizeof(int))
        c.scratch_score = <double*>duplicate(self.scratch_score, g * sizeof(double))
        c.scratch_nodes = <int*>duplicate(self.scratch_nodes, N * sizeof(int))
        c.chosen_node = self.chosen_node
        c.indexed = self.indexed
        c.idle_on_node = <int*>duplicate(self.idle_on_node, N * sizeof(int))
        c.idle_total = self.idle_total
        c.open_list = <int*>duplicate(self.open_list, g * sizeof(int))
        c.open_pos = <int*>duplicate(self.open_pos, g * sizeof(int))
        c.open_n = self.open_n
        c.gpu_epoch = self.gpu_epoch
        c.sharing = self.sharing
        c.one_node_gangs = self.one_node_gangs
        c.free_capacity_fits = self.free_capacity_fits
        c.unit = self.unit
        c.demand_name = self.demand_name
        c.free_format = self.free_format
        c.gpu_model = <int*>duplicate(self.gpu_model, g * sizeof(int))
        c.node_cpu_array = self.node_cpu_array.copy()
        c.node_mem_array = self.node_mem_array.copy()
        c.node_cpu_free = <double*>cnp.PyArray_DATA(c.node_cpu_array)
        c.node_mem_free = <double*>cnp.PyArray_DATA(c.node_mem_array)
        c.mig = self.mig.copy(g)
        return c

    def __dealloc__(self):
        free(self.gpu_node)
        free(self.node_gpus)
        free(self.capacity)
        free(self.inv_capacity)
        free(self.gpu_speed)
        free(self.gpu_jobs)
        free(self.gpu_jobs_n)
        free(self.gpu_table)
        free(self.gpu_model_speed)
        free(self.scratch_row)
        free(self.scratch_cols)
        free(self.scratch_gpus)
        free(self.scratch_score)
        free(self.scratch_nodes)
        free(self.idle_on_node)
        free(self.open_list)
        free(self.open_pos)
        free(self.gpu_model)


@cython.final
cdef class MigTable:
    """The MIG instances of a cluster under the mig model: the profiles of its MIG GPU
    model, each GPU's instances (``MIG_SLOTS`` slots per GPU) and the jobs reserving them
    (``np`` 0: another model)."""

    cdef readonly int np  # profiles (0: not the mig model)
    cdef int[MIG_MAX_PROFILES] compute  # compute slices of each profile
    cdef int[MIG_MAX_PROFILES] memory  # memory slices of each profile
    cdef int[MIG_MAX_PROFILES] starts  # bit s: the profile may start at memory slice s
    cdef int compute_slices  # a whole GPU's compute slices
    cdef int memory_slices  # and memory slices
    cdef double mps_speed  # a worker's speed on an MPS-shared instance, x its speed alone
    cdef double op_s  # time of one instance create or destroy [s]
    cdef double* inst_ready  # (G, MIG_SLOTS) when it exists (its creation done) [s]
    cdef int* inst_profile  # (G, MIG_SLOTS) each slot's profile, -1: no instance
    cdef int* inst_start  # (G, MIG_SLOTS) its first memory slice
    cdef int* inst_count  # (G, MIG_SLOTS) workers holding it
    cdef int* inst_mps  # (G, MIG_SLOTS) 1: shared by its workers under MPS
    cdef int* inst_res  # (G, MIG_SLOTS) jobs it is reserved for
    cdef int* res_gpu  # (J) the GPU of the instance the job reserves, -1: none
    cdef int* res_slot  # (J) and its slot
    cdef int num_jobs
    cdef int rule  # which idle instance a worker takes: S_MIG_FIT or S_MIG_LARGEST
    cdef readonly tuple names  # the profiles' names

    cdef void build(self, mig, int num_gpus, int num_jobs) except *:
        """The MIG profiles and every GPU's first partition (a ``MigInput``)."""
        cdef int i, g, slot, p
        self.np = len(mig.profile_compute)
        if not 1 <= self.np <= MIG_MAX_PROFILES:
            raise ValueError(f"mig: 1 to {MIG_MAX_PROFILES} profiles, got {self.np}")
        if len(mig.initial) != num_gpus:
            raise ValueError(f"mig: one first partition per GPU ({num_gpus}), got {len(mig.initial)}")
        for p in range(self.np):
            self.compute[p] = mig.profile_compute[p]
            self.memory[p] = mig.profile_memory[p]
            self.starts[p] = sum(1 << s for s in mig.profile_starts[p])
        self.compute_slices = mig.compute_slices
        self.memory_slices = mig.memory_slices
        self.mps_speed = mig.mps_speed
        self.op_s = mig.operation_s
        self.names = tuple(mig.profile_names)
        self.num_jobs = num_jobs
        n = num_gpus * MIG_SLOTS
        self.inst_profile = <int*>checked_malloc(n * sizeof(int))
        self.inst_start = <int*>checked_malloc(n * sizeof(int))
        self.inst_count = <int*>checked_malloc(n * sizeof(int))
        self.inst_mps = <int*>checked_malloc(n * sizeof(int))
        self.inst_res = <int*>checked_malloc(n * sizeof(int))
        self.inst_ready = <double*>checked_malloc(n * sizeof(double))
        for i in range(n):
            self.inst_ready[i] = 0.0
            self.inst_profile[i] = -1
            self.inst_start[i] = 0
            self.inst_count[i] = 0
            self.inst_mps[i] = 0
            self.inst_res[i] = 0
        self.res_gpu = <int*>checked_malloc((num_jobs + 1) * sizeof(int))
        self.res_slot = <int*>checked_malloc((num_jobs + 1) * sizeof(int))
        for i in range(num_jobs):
            self.res_gpu[i] = -1
            self.res_slot[i] = -1
        for g in range(num_gpus):
            for slot, (p, start) in enumerate(sorted(mig.initial[g], key=lambda ps: ps[1])):
                self.inst_profile[g * MIG_SLOTS + slot] = p
                self.inst_start[g * MIG_SLOTS + slot] = start

    cdef MigTable copy(self, int num_gpus):
        """An independent table in the same state (``Core.fork``)."""
        cdef MigTable c = MigTable.__new__(MigTable)
        cdef int n = num_gpus * MIG_SLOTS
        c.np = self.np
        c.compute = self.compute
        c.memory = self.memory
        c.starts = self.starts
        c.compute_slices = self.compute_slices
        c.memory_slices = self.memory_slices
        c.mps_speed = self.mps_speed
        c.op_s = self.op_s
        c.rule = self.rule
        c.names = self.names
        c.num_jobs = self.num_jobs
        if self.np:
            c.inst_profile = <int*>duplicate(self.inst_profile, n * sizeof(int))
            c.inst_start = <int*>duplicate(self.inst_start, n * sizeof(int))
            c.inst_count = <int*>duplicate(self.inst_count, n * sizeof(int))
            c.inst_mps = <int*>duplicate(self.inst_mps, n * sizeof(int))
            c.inst_res = <int*>duplicate(self.inst_res, n * sizeof(int))
            c.inst_ready = <double*>duplicate(self.inst_ready, n * sizeof(double))
            c.res_gpu = <int*>duplicate(self.res_gpu, (self.num_jobs + 1) * sizeof(int))
            c.res_slot = <int*>duplicate(self.res_slot, (self.num_jobs + 1) * sizeof(int))
        return c

    def __dealloc__(self):
        free(self.inst_profile)
        free(self.inst_start)
        free(self.inst_count)
        free(self.inst_mps)
        free(self.inst_res)
        free(self.inst_ready)
        free(self.res_gpu)
        free(self.res_slot)


@cython.final
cdef class JobTable:
    """The jobs: one C record per job by rank (arrival order), their GPUs, and the
    queue, running, in-transition and finished lists."""

    cdef Job* row  # (num_jobs) by rank
    cdef readonly int num_jobs
    cdef int* gpus_of  # flat, each job's slice at its offset
    cdef int total_gpus  # the length of gpus_of and prev_of
    cdef int max_jobs  # workers one GPU may hold (colocated holds max_jobs + 1)
    cdef int* prev_of  # the GPUs each job held before its last suspension
    cdef double* inv_solo  # (num_jobs) 1 / solo duration
    cdef int* shape_of  # (num_jobs) the job's shape (GPUs requested, worker memory)
    cdef int* queue  # waiting ranks, sorted (rank order = (arrival, id) order)
    cdef int queue_n
    cdef int* running  # RUNNING ranks in the order they started
    cdef int running_n
    cdef int* finished  # ranks in finishing order
    cdef int finished_n
    cdef int* transit  # SUSPENDING / RESUMING ranks in the order they began
    cdef int transit_n
    cdef int next_arrival
    cdef int* touched_jobs  # scratch for _touch_compute
    cdef int* colocated  # (max_jobs + 1) scratch: the workers beside one
    cdef Worker* workers  # (total_gpus) each worker, at its job's offset
    cdef double* mig_speed  # (num_jobs, MIG_MAX_PROFILES) speed per profile, 0: unfit (mig)

    cdef void build(self, jobs_in, int max_jobs) except *:
        """The jobs of ``jobs_in`` (a ``JobsInput``) in (arrival, id) order, none arrived."""
        cdef int i, k, n, offset
        cdef Job* job
        ids = jobs_in.job_id
        n = self.num_jobs = len(ids)
        self.row = <Job*>checked_malloc(n * sizeof(Job))
        total_gpus = self.total_gpus = int(sum(jobs_in.num_gpus))
        self.max_jobs = max_jobs
        self.gpus_of = <int*>checked_malloc(total_gpus * sizeof(int))
        self.prev_of = <int*>checked_malloc(total_gpus * sizeof(int))
        self.inv_solo = <double*>checked_malloc(n * sizeof(double))
        self.transit = <int*>checked_malloc(n * sizeof(int))
        offset = 0
        for i in range(n):
            job = &self.row[i]
            job.job_id = ids[i]
            job.num_gpus = jobs_in.num_gpus[i]
            job.demand = jobs_in.demand[i]
            job.intensity = jobs_in.intensity[i]
            job.iterations = jobs_in.iterations[i]
            job.step_time = jobs_in.step_time_s[i]
            job.arrival = jobs_in.arrival_s[i]
            job.model = jobs_in.model_index[i]
            job.noise = jobs_in.noise[i]
            job.suspend_overhead = jobs_in.suspend_overhead_s[i]
            job.resume_overhead = jobs_in.resume_overhead_s[i]
            job.cross_factor = jobs_in.cross_node_factor[i]
            job.size_index = jobs_in.size_index[i]
            job.cpu = jobs_in.cpu_milli[i]
            job.host_mem = jobs_in.host_memory_mib[i]
            job.model_mask = jobs_in.model_mask[i]
            job.status = FUTURE
            job.offset = offset
            job.node = -1
            job.prev_node = -1
            job.first_start = float("nan")
            job.finish = float("nan")
            offset += job.num_gpus
            self.inv_solo[i] = jobs_in.inv_solo_s[i]
        self.colocated = <int*>checked_malloc((max_jobs + 1) * sizeof(int))
        self.workers = <Worker*>checked_malloc(total_gpus * sizeof(Worker))
        for i in range(n):
            job = &self.row[i]
            for k in range(job.offset, job.offset + job.num_gpus):
                self.workers[k].take = job.demand
                self.workers[k].load = job.intensity
                self.workers[k].speed = 1.0
                self.workers[k].inst = -1
        speeds = jobs_in.profile_speed
        if speeds:
            self.mig_speed = <double*>checked_malloc(n * MIG_MAX_PROFILES * sizeof(double))
            for i in range(n):
                for k in range(MIG_MAX_PROFILES):
                    self.mig_speed[i * MIG_MAX_PROFILES + k] = speeds[i][k] if k < len(speeds[i]) else 0.0
        self.queue = <int*>checked_malloc(n * sizeof(int))
        self.running = <int*>checked_malloc(n * sizeof(int))
        self.finished = <int*>checked_malloc(n * sizeof(int))
        self.touched_jobs = <int*>checked_malloc((n + 1) * sizeof(int))

    cdef JobTable copy(self):
        """An independent table in the same state (``Core.fork``)."""
        cdef JobTable c = JobTable.__new__(JobTable)
        cdef int n = self.num_jobs
        c.num_jobs = n
        c.total_gpus = self.total_gpus
        c.max_jobs = self.max_jobs
        c.row = <Job*>duplicate(self.row, n * sizeof(Job))
        c.gpus_of = <int*>duplicate(self.gpus_of, self.total_gpus * sizeof(int))
        c.prev_of = <int*>duplicate(self.prev_of, self.total_gpus * sizeof(int))
        c.inv_solo = <double*>duplicate(self.inv_solo, n * sizeof(double))
        c.shape_of = <int*>duplicate(self.shape_of, n * sizeof(int))
        c.queue = <int*>duplicate(self.queue, n * sizeof(int))
        c.queue_n = self.queue_n
        c.running = <int*>duplicate(self.running, n * sizeof(int))
        c.running_n = self.running_n
        c.finished = <int*>duplicate(self.finished, n * sizeof(int))
        c.finished_n = self.finished_n
        c.transit = <int*>duplicate(self.transit, n * sizeof(int))
        c.transit_n = self.transit_n
        c.next_arrival = self.next_arrival
        c.touched_jobs = <int*>duplicate(self.touched_jobs, (n + 1) * sizeof(int))
        c.colocated = <int*>duplicate(self.colocated, (self.max_jobs + 1) * sizeof(int))
        c.workers = <Worker*>duplicate(self.workers, self.total_gpus * sizeof(Worker))
        if self.mig_speed != NULL:
            c.mig_speed = <double*>duplicate(self.mig_speed, n * MIG_MAX_PROFILES * sizeof(double))
        return c

    def __dealloc__(self):
        free(self.row)
        free(self.gpus_of)
        free(self.prev_of)
        free(self.inv_solo)
        free(self.shape_of)
        free(self.queue)
        free(self.running)
        free(self.finished)
        free(self.transit)
        free(self.touched_jobs)
        free(self.colocated)
        free(self.workers)
        free(self.mig_speed)


@cython.final
cdef class Meter:
    """The cluster's running sums (utilisation, allocation, free memory, fragmentation and
    expected fragmentation, each with its per-GPU parts) and the timeline."""

    cdef double median_worker  # [GiB] the workload's median worker memory
    cdef double* reference  # the workload's worker memories, sorted [GiB]
    cdef int num_reference
    cdef int num_gpus  # the length of each per-GPU part
    cdef double* util_part
    cdef int* alloc_part
    cdef double* free_part
    cdef double* frag_part
    cdef double* fgd_part
    cdef double util_sum
    cdef long allocated
    cdef double free_sum
    cdef double frag_sum
    cdef double fgd_sum
    cdef bint record_timeline
    cdef double* timeline  # (timeline_cap, 8)
    cdef long timeline_n
    cdef long timeline_cap

    cdef Meter copy(self):
        """An independent meter with the same sums, parts and timeline (``Core.fork``)."""
        cdef Meter c = Meter.__new__(Meter)
        cdef int g = self.num_gpus
        c.median_worker = self.median_worker
        c.reference = <double*>duplicate(self.reference, self.num_reference * sizeof(double))
        c.num_reference = self.num_reference
        c.num_gpus = g
        c.util_part = <double*>duplicate(self.util_part, g * sizeof(double))
        c.alloc_part = <int*>duplicate(self.alloc_part, g * sizeof(int))
        c.free_part = <double*>duplicate(self.free_part, g * sizeof(double))
        c.frag_part = <double*>duplicate(self.frag_part, g * sizeof(double))
        c.fgd_part = <double*>duplicate(self.fgd_part, g * sizeof(double))
        c.util_sum = self.util_sum
        c.allocated = self.allocated
        c.free_sum = self.free_sum
        c.frag_sum = self.frag_sum
        c.fgd_sum = self.fgd_sum
        c.record_timeline = self.record_timeline
        c.timeline = <double*>duplicate(self.timeline, self.timeline_cap * 8 * sizeof(double))
        c.timeline_n = self.timeline_n
        c.timeline_cap = self.timeline_cap
        return c

    def __dealloc__(self):
        free(self.reference)
        free(self.util_part)
        free(self.alloc_part)
        free(self.free_part)
        free(self.frag_part)
        free(self.fgd_part)
        free(self.timeline)


@cython.final
cdef class Windows:
    """The decision windows: the pending jobs a decision may choose (W, some slots by
    least attained service), the running jobs it may suspend (R), and what the last scan
    found (a choice, a possible advance, the rivals of each request size)."""

    cdef readonly int W
    cdef readonly int R
    cdef int* window_pending  # ranks in the window
    cdef int priority_slots  # pending slots chosen by least attained service
    cdef int* priority_pos  # their queue positions, while choosing  # (priority_slots + 1)
    cdef double* priority_key  # and their attained GPU-seconds  # (priority_slots + 1)
    cdef int pending_n
    cdef int S  # schedule actions per pending slot: one per strategy of the action space
    cdef int[NUM_CORE_STRATEGIES] strategy_code  # their core codes (S_EXCLUSIVE, ...)
    cdef int* window_running
    cdef int running_n_window
    cdef int waiting_gpus
    cdef bint has_choice
    cdef bint can_advance
    # the rivals pass, by GPUs requested: the pass that last saw such a waiting job, the
    # longest wait and the shortest predicted remaining time (+inf: none predicted)
    cdef int num_rivals  # largest request + 1
    cdef long* rival_seen  # (num_rivals)
    cdef long rival_pass
    cdef double* rival_wait  # [s]
    cdef double* rival_left  # [s]

    cdef void set_strategies(self, names, ShareRules rules) except *:
        """The action space's strategies (``EncoderInput.strategies``): 1 to
        ``NUM_CORE_STRATEGIES`` distinct names the episode can use
        (``ShareRules.refusal``)."""
        codes = C_ENUMS["STRATEGIES"]
        names = tuple(names)
        if not 1 <= len(names) <= NUM_CORE_STRATEGIES or len(set(names)) != len(names):
            raise ValueError(f"strategies: 1 to {NUM_CORE_STRATEGIES} distinct names, got {names}")
        for i, name in enumerate(names):
            refusal = rules.refusal(name)
            if refusal is not None:
                raise ValueError(f"strategies: {refusal}")
            self.strategy_code[i] = codes[name]
        self.S = len(names)

    cdef Windows copy(self):
        """Independent windows in the same state (``Core.fork``)."""
        cdef Windows c = Windows.__new__(Windows)
        cdef int P = self.priority_slots
        c.W = self.W
        c.R = self.R
        c.window_pending = <int*>duplicate(self.window_pending, (self.W + 1) * sizeof(int))
        c.priority_slots = P
        c.priority_pos = <int*>duplicate(self.priority_pos, (P + 1) * sizeof(int))
        c.priority_key = <double*>duplicate(self.priority_key, (P + 1) * sizeof(double))
        c.pending_n = self.pending_n
        c.S = self.S
        memcpy(c.strategy_code, self.strategy_code, NUM_CORE_STRATEGIES * sizeof(int))
        c.window_running = <int*>duplicate(self.window_running, (self.R + 1) * sizeof(int))
        c.running_n_window = self.running_n_window
        c.waiting_gpus = self.waiting_gpus
        c.has_choice = self.has_choice
        c.can_advance = self.can_advance
        c.num_rivals = self.num_rivals
        c.rival_seen = <long*>duplicate(self.rival_seen, self.num_rivals * sizeof(long))
        c.rival_pass = self.rival_pass
        c.rival_wait = <double*>duplicate(self.rival_wait, self.num_rivals * sizeof(double))
        c.rival_left = <double*>duplicate(self.rival_left, self.num_rivals * sizeof(double))
        return c

    def __dealloc__(self):
        free(self.window_pending)
        free(self.priority_pos)
        free(self.priority_key)
        free(self.window_running)
        free(self.rival_seen)
        free(self.rival_wait)
        free(self.rival_left)


@cython.final
cdef class Columns:
    """Where each feature sits in the observation: column indices looked up by name in
    the layout the env passes in (the feature registry, gpushare_env.envs.features), -1
    for an optional column that is off, and each key's offset in the flat buffer."""

    cdef int num_gpu_f, num_frag, num_pw, num_r, num_global  # columns per key
    cdef int gpu_at, frag_at, pending_at, running_at, global_at  # offsets in the buffer
    cdef int cg_free, cg_load, cg_workers, cg_node, cg_speed, cg_capacity
    cdef int cj_valid, cj_gpus, cj_memory, cj_intensity, cj_model0
    cdef int cj_wait, cj_sampled, cj_known, cj_predicted, cj_suspended, cj_progress
    cdef int cp_pack, cp_drain
    cdef int cr_speed, cr_held, cr_shares, cr_rival, cr_drain
    cdef int cl_time, cl_waiting, cl_backlog, cl_running, cl_transition, cl_in_system
    cdef int cl_finished, cl_util, cl_alloc, cl_free, cl_frag, cl_expected, cl_waiting_gpus
    cdef int cl_idle, cl_advance


@cython.final
cdef class Encoder:
    """The encoder's state: the observation buffer and action mask (numpy-owned), the
    per-GPU fragment categories kept up to date by dirty marks, the pack / spread answers
    by job shape, and the normalisers."""

    cdef bint has_encoder  # False: a headless core (no layout given), it encodes nothing
    cdef int num_models
    cdef int num_actions
    cdef public object buffer_array  # float32, every observation key
    cdef float* buffer
    cdef public object mask_array
    cdef cnp.npy_bool* mask
    cdef double* frag_edges  # upper edges of the shared-GPU bins of frag_hist [GiB]
    cdef int num_frag_edges
    cdef double* mem_values
    cdef int num_mem_values
    cdef int* fit_counts
    cdef int* level
    cdef int* category
    cdef int* category_counts  # (num_frag)
    cdef int idle_gpus
    cdef bint* dirty
    cdef int* dirty_list
    cdef int dirty_n
    # pack / spread answers by job shape (GPUs requested, worker memory): the largest load
    # on the GPUs each strategy picks (+inf: none fit), valid while no GPU changed
    cdef int num_shapes
    cdef long* shape_epoch  # (num_shapes) the gpu_epoch of the answers, -1: none yet
    cdef double* shape_peak  # (shapes, 2) pack, spread
    cdef double inv_max_speed
    cdef double inv_slots
    cdef double inv_gpus
    cdef double inv_jobs
    cdef double inv_total_memory
    cdef double log_gpus

    cdef Encoder copy(self, int num_gpus, int num_frag):
        """An independent encoder in the same state (``Core.fork``): the observation
        buffer and mask are new numpy arrays."""
        cdef Encoder c = Encoder.__new__(Encoder)
        cdef int g = num_gpus
        c.has_encoder = self.has_encoder
        c.num_models = self.num_models
        c.num_actions = self.num_actions
        c.buffer_array = self.buffer_array.copy()
        c.buffer = <float*>cnp.PyArray_DATA(c.buffer_array)
        c.mask_array = self.mask_array.copy()
        c.mask = <cnp.npy_bool*>cnp.PyArray_DATA(c.mask_array)
        c.frag_edges = <double*>duplicate(self.frag_edges, max(self.num_frag_edges, 1) * sizeof(double))
        c.num_frag_edges = self.num_frag_edges
        c.mem_values = <double*>duplicate(self.mem_values, self.num_mem_values * sizeof(double))
        c.num_mem_values = self.num_mem_values
        c.fit_counts = <int*>duplicate(self.fit_counts, self.num_mem_values * sizeof(int))
        c.level = <int*>duplicate(self.level, g * sizeof(int))
        c.category = <int*>duplicate(self.category, g * sizeof(int))
        c.category_counts = <int*>duplicate(self.category_counts, num_frag * sizeof(int))
        c.idle_gpus = self.idle_gpus
        c.dirty = <bint*>duplicate(self.dirty, g * sizeof(bint))
        c.dirty_list = <int*>duplicate(self.dirty_list, g * sizeof(int))
        c.dirty_n = self.dirty_n
        c.num_shapes = self.num_shapes
        c.shape_epoch = <long*>duplicate(self.shape_epoch, self.num_shapes * sizeof(long))
        c.shape_peak = <double*>duplicate(self.shape_peak, 2 * self.num_shapes * sizeof(double))
        c.inv_max_speed = self.inv_max_speed
        c.inv_slots = self.inv_slots
        c.inv_gpus = self.inv_gpus
        c.inv_jobs = self.inv_jobs
        c.inv_total_memory = self.inv_total_memory
        c.log_gpus = self.log_gpus
        return c

    def __dealloc__(self):
        free(self.frag_edges)
        free(self.mem_values)
        free(self.fit_counts)
        free(self.level)
        free(self.category)
        free(self.category_counts)
        free(self.dirty)
        free(self.dirty_list)
        free(self.shape_epoch)
        free(self.shape_peak)


@cython.final
cdef class ShareRules:
    """What FGD's six placement rules read beyond the GPU table (the shares model only):
    each job's request kind and draws, the target workload, each node's version (bumped
    whenever a job takes or leaves its GPUs), the kinds of task it holds now, and the
    fragmentation and ``share_fgd`` scores cached per node version."""

    cdef bint active
    cdef bint mig  # MIG's rules (mig_fit, mig_largest) apply: the mig model
    cdef int num_jobs
    cdef int num_nodes
    cdef int width  # node width (GPU columns per node)
    cdef int* job_kind  # (num_jobs) request kind
    cdef double* node_draw  # (num_jobs) share_random's node draw
    cdef double* gpu_draw  # (num_jobs) and GPU draw
    cdef int num_typical
    cdef double* t_cpu  # (num_typical) [milli-cores]
    cdef int* t_num
    cdef double* t_milli  # [milli-GPU]
    cdef long long* t_mask  # accepted GPU models (-1: any)
    cdef double* t_freq
    cdef long* node_version  # (num_nodes)
    cdef int* node_tags  # (num_nodes, width + 1) jobs on the node per kind tag
    cdef double* node_frag  # (num_nodes) fragmentation at frag_version
    cdef long* frag_version  # (num_nodes), 0: never computed
    cdef int num_kinds
    cdef long long* fgd_score  # (num_kinds, num_nodes) share_fgd's score at fgd_version
    cdef long long* fgd_cols  # (num_kinds, num_nodes) the GPU columns it chose (bit mask)
    cdef long* fgd_version  # (num_kinds, num_nodes), 0: never computed
    cdef int* feasible  # (num_nodes) scratch: the nodes that hold the job
    cdef long long* raw  # (num_nodes) scratch: raw scores (share_bestfit)
    cdef double* after  # (width) scratch: a node's free shares after a placement
    cdef int* tie_rank  # (num_nodes) order among equal scores, lower first (NULL: the
    # lower node; FGD's static experiment sets its seeded order, _static.pxi)

    cdef str refusal(self, name):
        """Why the episode cannot place with strategy ``name`` (a sentence), or ``None``:
        an unknown name, or one of FGD's rules under a sharing model without them."""
        codes = C_ENUMS["STRATEGIES"]
        if name not in codes:
            return f"unknown strategy {name!r}; allowed: {list(codes)}"
        if S_SHARE_RANDOM <= codes[name] <= S_SHARE_FGD and not self.active:
            return (
                f"strategy {name!r} places requested shares; it needs the shares model "
                "(SimConfig.sharing = 'shares')"
            )
        if codes[name] >= S_MIG_FIT and not self.mig:
            return (
                f"strategy {name!r} places jobs on MIG instances; it needs the mig model "
                "(SimConfig.sharing = 'mig')"
            )
        return None

    cdef void build(self, jobs_in, sim_in, GpuTable gpus) except *:
        """Empty (``active`` off) unless the sharing model has FGD's rules
        (``sim_in.share_rules``)."""
        cdef int i, n
        self.active = sim_in.share_rules
        self.mig = sim_in.mig_rules
        if not self.active:
            return
        n = self.num_jobs = len(jobs_in.job_id)
        self.num_nodes = gpus.num_nodes
        self.width = gpus.node_width
        self.job_kind = <int*>checked_malloc((n + 1) * sizeof(int))
        self.node_draw = <double*>checked_malloc((n + 1) * sizeof(double))
        self.gpu_draw = <double*>checked_malloc((n + 1) * sizeof(double))
        for i in range(n):
            self.job_kind[i] = jobs_in.request_kind[i]
            self.node_draw[i] = jobs_in.node_draw[i]
            self.gpu_draw[i] = jobs_in.gpu_draw[i]
        typical = sim_in.target_workload
        self.num_typical = len(typical)
        self.t_cpu = <double*>checked_malloc((self.num_typical + 1) * sizeof(double))
        self.t_num = <int*>checked_malloc((self.num_typical + 1) * sizeof(int))
        self.t_milli = <double*>checked_malloc((self.num_typical + 1) * sizeof(double))
        self.t_mask = <long long*>checked_malloc((self.num_typical + 1) * sizeof(long long))
        self.t_freq = <double*>checked_malloc((self.num_typical + 1) * sizeof(double))
        for i, (cpu, num, milli, mask, freq) in enumerate(typical):
            self.t_cpu[i] = cpu
            self.t_num[i] = num
            self.t_milli[i] = milli
            self.t_mask[i] = mask
            self.t_freq[i] = freq
        self.node_version = <long*>checked_malloc(self.num_nodes * sizeof(long))
        for i in range(self.num_nodes):
            self.node_version[i] = 1
        self.node_tags = <int*>checked_malloc(self.num_nodes * (self.width + 1) * sizeof(int))
        self.node_frag = <double*>checked_malloc(self.num_nodes * sizeof(double))
        self.frag_version = <long*>checked_malloc(self.num_nodes * sizeof(long))
        self.num_kinds = max(jobs_in.request_kind) + 1 if n else 1
        self.fgd_score = <long long*>checked_malloc(self.num_kinds * self.num_nodes * sizeof(long long))
        self.fgd_cols = <long long*>checked_malloc(self.num_kinds * self.num_nodes * sizeof(long long))
        self.fgd_version = <long*>checked_malloc(self.num_kinds * self.num_nodes * sizeof(long))
        self.feasible = <int*>checked_malloc(self.num_nodes * sizeof(int))
        self.raw = <long long*>checked_malloc(self.num_nodes * sizeof(long long))
        self.after = <double*>checked_malloc((self.width + 1) * sizeof(double))

    cdef ShareRules copy(self):
        """Independent rules in the same state, caches included (``Core.fork``)."""
        cdef ShareRules c = ShareRules.__new__(ShareRules)
        cdef int n = self.num_jobs, N = self.num_nodes, T = self.num_typical
        cdef int K = self.num_kinds
        c.active = self.active
        c.mig = self.mig
        if not self.active:
            return c
        c.num_jobs = n
        c.num_nodes = N
        c.width = self.width
        c.job_kind = <int*>duplicate(self.job_kind, (n + 1) * sizeof(int))
        c.node_draw = <double*>duplicate(self.node_draw, (n + 1) * sizeof(double))
        c.gpu_draw = <double*>duplicate(self.gpu_draw, (n + 1) * sizeof(double))
        c.num_typical = T
        c.t_cpu = <double*>duplicate(self.t_cpu, (T + 1) * sizeof(double))
        c.t_num = <int*>duplicate(self.t_num, (T + 1) * sizeof(int))
        c.t_milli = <double*>duplicate(self.t_milli, (T + 1) * sizeof(double))
        c.t_mask = <long long*>duplicate(self.t_mask, (T + 1) * sizeof(long long))
        c.t_freq = <double*>duplicate(self.t_freq, (T + 1) * sizeof(double))
        c.node_version = <long*>duplicate(self.node_version, N * sizeof(long))
        c.node_tags = <int*>duplicate(self.node_tags, N * (self.width + 1) * sizeof(int))
        c.node_frag = <double*>duplicate(self.node_frag, N * sizeof(double))
        c.frag_version = <long*>duplicate(self.frag_version, N * sizeof(long))
        c.num_kinds = K
        c.fgd_score = <long long*>duplicate(self.fgd_score, K * N * sizeof(long long))
        c.fgd_cols = <long long*>duplicate(self.fgd_cols, K * N * sizeof(long long))
        c.fgd_version = <long*>duplicate(self.fgd_version, K * N * sizeof(long))
        c.feasible = <int*>duplicate(self.feasible, N * sizeof(int))
        c.raw = <long long*>duplicate(self.raw, N * sizeof(long long))
        c.after = <double*>duplicate(self.after, (self.width + 1) * sizeof(double))
        c.tie_rank = <int*>duplicate(self.tie_rank, N * sizeof(int))
        return c

    def __dealloc__(self):
        free(self.job_kind)
        free(self.node_draw)
        free(self.gpu_draw)
        free(self.t_cpu)
        free(self.t_num)
        free(self.t_milli)
        free(self.t_mask)
        free(self.t_freq)
        free(self.node_version)
        free(self.node_tags)
        free(self.node_frag)
        free(self.frag_version)
        free(self.fgd_score)
        free(self.fgd_cols)
        free(self.fgd_version)
        free(self.feasible)
        free(self.raw)
        free(self.after)
        free(self.tie_rank)
