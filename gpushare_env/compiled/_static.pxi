# The compiled core, FGD's static experiment (included by _core.pyx after the core's
# classes): tasks arrive one by one and are placed on the core's cluster state by the
# core's own share_* rules, nothing ever leaves, and the cluster's fragment after each
# arrival is the sum of the core's per-node fragments (baselines/openb/protocol.py runs
# the protocol; docs/fgd.md).

from types import SimpleNamespace


@cython.final
cdef class _StaticPlacement(_Placement):
    """One run of FGD's static experiment on the core's parts (the GPU table and the
    share rules, with the seeded tie order): each task is a job of rank = its arrival,
    placed as the simulator places a job under the shares model (``_find_placement``)
    and its place taken as ``_Simulation._occupy`` takes it, without time, events or
    meters."""

    cdef int num_tasks

    cdef void _build(self, cluster_in, jobs_in, sim_in, tie_rank) except *:
        """The empty cluster of ``cluster_in``, the tasks of ``jobs_in`` (the fields of
        ``JobsInput`` the rules read) and the target workload of ``sim_in``."""
        cdef int i, n = len(jobs_in.job_id)
        cdef Job* job
        self.gpus.build(cluster_in, sim_in)
        self.rules.build(jobs_in, sim_in, self.gpus)
        if len(tie_rank) != self.gpus.num_nodes or sorted(tie_rank) != list(range(self.gpus.num_nodes)):
            raise ValueError(f"tie_rank must be a permutation of 0..{self.gpus.num_nodes - 1}")
        self.rules.tie_rank = <int*>checked_malloc(self.gpus.num_nodes * sizeof(int))
        for i in range(self.gpus.num_nodes):
            self.rules.tie_rank[i] = tie_rank[i]
        self.num_tasks = n
        self.jobs.num_jobs = n
        self.jobs.row = <Job*>checked_malloc(n * sizeof(Job))
        for i in range(n):
            job = &self.jobs.row[i]
            job.job_id = i
            job.num_gpus = jobs_in.num_gpus[i]
            job.demand = jobs_in.demand[i]
            job.cpu = jobs_in.cpu_milli[i]
            job.host_mem = jobs_in.host_memory_mib[i]
            job.model_mask = jobs_in.model_mask[i]
            job.status = PENDING
            job.node = -1
            job.prev_node = -1

    cdef void _take(self, int rank, int node, int* chosen, int count) noexcept:
        """Job ``rank`` takes its place: ``_occupy``'s bookkeeping of the node and GPUs."""
        cdef Job* job = &self.jobs.row[rank]
        cdef int i, g
        job.node = node
        job.held = count
        job.status = RUNNING
        self._hold_node(node, job, 1)
        for i in range(count):
            g = chosen[i]
            self.gpus.free_cap[g] = self.gpus.free_cap[g] - job.demand
            self.gpus.holders[g] += 1
            self._holders_changed(g, self.gpus.holders[g] - 1)

    cdef void _run(self, int strategy, long long[::1] node_of, long long[::1] columns_of,
                   long long[::1] allocated, double[::1] fragment, double[::1] running) noexcept:
        """Every task in rank order: its node (-1: none holds it), the mask of its GPUs'
        columns, and after it the GPU handed out and the cluster's fragment. The fragment
        is summed in node order, as ``baselines.openb`` sums it; ``running`` (N) keeps
        the partial sums, so that after a placement only those from its node on are
        summed again (the same additions in the same order)."""
        cdef int rank, node, i, col, count, width = self.gpus.node_width
        cdef int num_nodes = self.gpus.num_nodes, changed = 0
        cdef int* out = self.gpus.scratch_gpus
        cdef long long handed_out = 0, mask
        cdef double total = 0.0
        cdef Job* job
        for node in range(num_nodes):
            self._node_fragment_now(node)
        for rank in range(self.num_tasks):
            job = &self.jobs.row[rank]
            count = self._find_placement(rank, strategy, out)
            if count >= 0:
                node = self.gpus.chosen_node
                self._take(rank, node, out, count)
                self._node_fragment_now(node)  # the one node whose fragment changed
                mask = 0
                for i in range(count):
                    for col in range(width):
                        if self.gpus.node_gpus[node * width + col] == out[i]:
                            mask |= (<long long>1) << col
                node_of[rank] = node
                columns_of[rank] = mask
                handed_out += <long long>(job.num_gpus * job.demand)
                changed = node if node < changed else changed
            allocated[rank] = handed_out
            if changed < num_nodes:
                total = 0.0 if changed == 0 else running[changed - 1]
                for node in range(changed, num_nodes):
                    total += self.rules.node_frag[node]
                    running[node] = total
                changed = num_nodes
            fragment[rank] = total


def place_static(
    strategy, cluster_in, target_workload, tie_rank, num_gpus, share_milli, cpu_milli,
    host_memory_mib, model_mask, request_kind, node_draw, gpu_draw,
):
    """FGD's static experiment on the core: tasks placed in arrival order by a share rule.

    Args:
        strategy: A ``share_*`` strategy (``gpushare_env.sim.placement.SHARE_RULES``).
        cluster_in: The empty cluster, a ``ClusterInput`` of GPUs of 1000 milli-GPU (a
            node may have no GPU).
        target_workload: The target workload, as ``SimInput.target_workload``.
        tie_rank: The nodes' order among equal scores, a permutation (lower first).
        num_gpus, share_milli, cpu_milli, host_memory_mib, model_mask, request_kind,
            node_draw, gpu_draw: The tasks in arrival order, one entry each, as the
            ``JobsInput`` fields of a job under the shares model (``share_milli``:
            ``demand``, the share of each GPU; 0 with ``num_gpus`` 0 for a CPU-only
            task).  (M,)

    Returns:
        A dict of arrays (M,): ``node`` of each task (-1: no node held it), ``gpus`` the
        bit mask of its GPUs' columns on the node, ``allocated`` the GPU shares handed out
        after it [milli-GPU] and ``fragmentation`` the cluster's fragment after it
        [milli-GPU].
    """
    codes = C_ENUMS["STRATEGIES"]
    if not S_SHARE_RANDOM <= codes.get(strategy, -1) <= S_SHARE_FGD:
        names = [name for name, code in codes.items() if S_SHARE_RANDOM <= code <= S_SHARE_FGD]
        raise ValueError(f"unknown share rule {strategy!r}; choose from {', '.join(names)}")
    count = len(num_gpus)
    columns = (share_milli, cpu_milli, host_memory_mib, model_mask, request_kind, node_draw, gpu_draw)
    if any(len(column) != count for column in columns):
        raise ValueError(f"every task field needs {count} entries, one per task")
    jobs_in = SimpleNamespace(
        job_id=range(count), num_gpus=list(num_gpus), demand=list(share_milli),
        cpu_milli=list(cpu_milli), host_memory_mib=list(host_memory_mib),
        model_mask=list(model_mask), request_kind=list(request_kind),
        node_draw=list(node_draw), gpu_draw=list(gpu_draw),
    )
    from gpushare_env.sim.sharing import sharing_model

    sim_in = SimpleNamespace(
        **sharing_model("shares").sim_fields(), target_workload=tuple(target_workload)
    )
    cdef _StaticPlacement run = _StaticPlacement.__new__(_StaticPlacement)
    run._build(cluster_in, jobs_in, sim_in, list(tie_rank))
    node_of = np.full(count, -1, dtype=np.int64)
    columns_of = np.zeros(count, dtype=np.int64)
    allocated = np.zeros(count, dtype=np.int64)
    fragmentation = np.zeros(count, dtype=np.float64)
    run._run(codes[strategy], node_of, columns_of, allocated, fragmentation, np.zeros(run.gpus.num_nodes))
    return {"node": node_of, "gpus": columns_of, "allocated": allocated, "fragmentation": fragmentation}
