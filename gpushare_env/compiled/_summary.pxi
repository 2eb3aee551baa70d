# The compiled core, the cluster summary (included by _core.pyx): obs["cluster"] of
# observation.cluster_summary, from the per-GPU rows the encoder keeps.

def summarise_cluster(
    const float[::1] gpus,
    int columns,
    int free_col,
    int load_col,
    int workers_col,
    const long[::1] kind,
    const long[::1] node,
    const long[::1] node_kind,
    const double[::1] per_gpu,
    const double[::1] memory_weight,
    const double[:, ::1] static,
    double max_jobs,
    const double[::1] edges,
    const long[::1] widths,
    double[::1] idle_per_node,
    double[::1] sums,
    float[::1] out,
):
    """Write ``obs["cluster"]`` (types x features, flattened) into ``out``.

    ``gpus`` is ``obs["gpus"]`` (one row of ``columns`` per GPU). Per GPU type ``t``:
    ``static[t]`` (share, log GPUs), then the means over its GPUs of idle, the free-memory
    bins of shared GPUs (upper ``edges``, the last bin taking the rest), free memory
    weighted by ``memory_weight``, ``max(0, 1 - U_g)`` and ``U_g > 1``, then for each gang
    width ``w`` the GPUs in whole ``w``-gangs of idle GPUs of one node. ``sums`` (types x
    features) and ``idle_per_node`` are scratch.
    """
    cdef Py_ssize_t num_gpus = kind.shape[0], types = static.shape[0]
    cdef Py_ssize_t bins = edges.shape[0] + 1, features = sums.shape[0] // types
    cdef Py_ssize_t g, t, b, n, w, at
    cdef double free_share, load
    cdef bint idle
    memset(&sums[0], 0, sums.shape[0] * sizeof(double))
    memset(&idle_per_node[0], 0, idle_per_node.shape[0] * sizeof(double))
    for g in range(num_gpus):
        free_share = gpus[g * columns + free_col]
        load = gpus[g * columns + load_col] * max_jobs
        idle = gpus[g * columns + workers_col] <= 0.0
        at = kind[g] * features
        if idle:
            sums[at + 2] += 1.0
            idle_per_node[node[g]] += 1.0
        else:
            b = 0
            while b < bins - 1 and free_share > edges[b]:
                b += 1
            sums[at + 3 + b] += 1.0
            sums[at + 3 + bins] += free_share * memory_weight[g]
        sums[at + 4 + bins] += 1.0 - load if load < 1.0 else 0.0
        if load > 1.0 + 1e-9:
            sums[at + 5 + bins] += 1.0
    for n in range(idle_per_node.shape[0]):
        at = node_kind[n] * features + 6 + bins
        for w in range(widths.shape[0]):
            sums[at + w] += widths[w] * <long>(idle_per_node[n] / widths[w])
    for t in range(types):
        out[t * features] = <float>static[t, 0]
        out[t * features + 1] = <float>static[t, 1]
        for b in range(2, features):
            out[t * features + b] = <float>(sums[t * features + b] * per_gpu[t])
