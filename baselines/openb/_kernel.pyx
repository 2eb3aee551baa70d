# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, nonecheck=False
"""The placement loop of FGD's experiment, compiled: the six policies of ``baselines.openb``.

Every rule here is the one its Python class states (``random_fit.py`` ... ``fgd.py``,
``cluster.py``, ``fragmentation.py``); ``tests/baselines/test_openb_kernel.py`` checks
that both place every task of random workloads on the same node and GPUs. This file only
makes them fast enough for the paper's experiment (about 10,600 tasks onto 1,213 nodes,
60 runs, within a minute on two cores):

* node state lives in flat arrays; a model is a bit, a task's accepted models a mask
  (bit 62 marks "some models", so that a mask naming no model of the cluster is not 0);
* a node's fragmentation is kept per node and recomputed only when the node changes;
* FGD's score of a node for a kind of task (CPU, share, GPU count, models: what the score
  depends on) is cached with the node's version and recomputed only after the node
  changed, since a placement changes one node.

Integer and floating-point steps follow the Python classes operation by operation (the
sums of fragment categories in the same order, truncation toward zero), so both agree to
the bit.
"""

from libc.math cimport exp

import numpy as np

cdef enum:
    RANDOM = 0
    DOTPROD = 1
    CLUSTERING = 2
    PACKING = 3
    BESTFIT = 4
    FGD = 5

cdef enum:
    MILLI = 1000
    MAX_SCORE = 100
    MAX_SPEC_CPU = 128000
    MAX_SPEC_GPU = 8000

#: Policy codes of :func:`place_all`, by the policies' names.
POLICY_CODES = {
    "random": RANDOM,
    "dotprod": DOTPROD,
    "clustering": CLUSTERING,
    "packing": PACKING,
    "bestfit": BESTFIT,
    "fgd": FGD,
}


cdef class _Placer:
    """The cluster's state and the target workload; one run."""

    cdef Py_ssize_t num_nodes, width, num_typical
    cdef long long[::1] cpu_free, memory_free, num_gpus, model_bit, tie_rank
    cdef long long[::1] affinity, version
    cdef long long[:, ::1] gpu_free
    cdef double[::1] fragment
    cdef long long[::1] typical_cpu, typical_num, typical_milli, typical_spec
    cdef double[::1] typical_frequency
    cdef long long[:, ::1] cached_score, cached_gpu, cached_version
    cdef long long[::1] feasible, raw, after

    def __init__(self, cpu_capacity, memory_capacity, num_gpus, model_bit, tie_rank,
                 typical_cpu, typical_num, typical_milli, typical_spec, typical_frequency,
                 Py_ssize_t num_kinds):
        cdef Py_ssize_t n
        self.num_nodes = len(cpu_capacity)
        self.width = max(1, int(np.max(num_gpus)))
        self.cpu_free = np.array(cpu_capacity, dtype=np.int64)
        self.memory_free = np.array(memory_capacity, dtype=np.int64)
        self.num_gpus = np.array(num_gpus, dtype=np.int64)
        self.model_bit = np.array(model_bit, dtype=np.int64)
        self.tie_rank = np.array(tie_rank, dtype=np.int64)
        self.affinity = np.zeros(self.num_nodes, dtype=np.int64)
        self.version = np.ones(self.num_nodes, dtype=np.int64)
        gpu_free = np.zeros((self.num_nodes, self.width), dtype=np.int64)
        for n in range(self.num_nodes):
            gpu_free[n, : self.num_gpus[n]] = MILLI
        self.gpu_free = gpu_free
        self.num_typical = len(typical_cpu)
        self.typical_cpu = np.array(typical_cpu, dtype=np.int64)
        self.typical_num = np.array(typical_num, dtype=np.int64)
        self.typical_milli = np.array(typical_milli, dtype=np.int64)
        self.typical_spec = np.array(typical_spec, dtype=np.int64)
        self.typical_frequency = np.array(typical_frequency, dtype=np.float64)
        self.cached_score = np.zeros((max(1, num_kinds), self.num_nodes), dtype=np.int64)
        self.cached_gpu = np.zeros((max(1, num_kinds), self.num_nodes), dtype=np.int64)
        self.cached_version = np.zeros((max(1, num_kinds), self.num_nodes), dtype=np.int64)
        self.feasible = np.zeros(self.num_nodes, dtype=np.int64)
        self.raw = np.zeros(self.num_nodes, dtype=np.int64)
        self.after = np.zeros(self.width, dtype=np.int64)
        self.fragment = np.zeros(self.num_nodes, dtype=np.float64)
        for n in range(self.num_nodes):
            self.fragment[n] = self.node_fragment(
                self.cpu_free[n], self.model_bit[n], &self.gpu_free[n, 0], self.num_gpus[n]
            )

    # -- fragmentation.py ----------------------------------------------------------------

    cdef double node_fragment(
        self, long long cpu_free, long long model_bit, const long long* free, long long count
    ) noexcept nogil:
        cdef double lack_both = 0.0, lack_gpu = 0.0, satisfied = 0.0, lack_cpu = 0.0
        cdef double cpu_ok = 0.0, cpu_lack = 0.0, no_access = 0.0, weight
        cdef long long idle = 0, too_small, holding, milli, spec
        cdef Py_ssize_t t, j
        cdef bint cpu_fits
        for j in range(count):
            idle += free[j]
        for t in range(self.num_typical):
            weight = self.typical_frequency[t]
            milli = self.typical_milli[t]
            spec = self.typical_spec[t]
            cpu_fits = cpu_free >= self.typical_cpu[t]
            if milli == 0:
                if cpu_fits:
                    cpu_ok += weight * idle
                else:
                    cpu_lack += weight * idle
            elif spec != 0 and (spec & model_bit) == 0:
                no_access += weight * idle
            else:
                holding = 0
                too_small = 0
                for j in range(count):
                    if free[j] >= milli:
                        holding += 1
                    else:
                        too_small += free[j]
                if holding >= self.typical_num[t]:
                    if cpu_fits:
                        lack_gpu += weight * too_small
                        satisfied += weight * (idle - too_small)
                    else:
                        lack_cpu += weight * idle
                elif cpu_fits:
                    lack_gpu += weight * idle
                else:
                    lack_both += weight * idle
        return 0.0 + lack_both + lack_gpu + lack_cpu + cpu_ok + cpu_lack + no_access

    # -- cluster.py ------------------------------------------------------------------------

    cdef bint fits(self, Py_ssize_t n, long long cpu, long long memory, long long num,
                   long long milli, long long spec) noexcept nogil:
        cdef long long holding = 0
        cdef Py_ssize_t j
        if self.cpu_free[n] < cpu or self.memory_free[n] < memory:
            return False
        if milli == 0:
            return True
        if self.num_gpus[n] == 0 or (spec != 0 and (spec & self.model_bit[n]) == 0):
            return False
        for j in range(self.num_gpus[n]):
            if self.gpu_free[n, j] >= milli:
                holding += 1
        return holding >= num

    cdef long long free_total(self, Py_ssize_t n) noexcept nogil:
        cdef long long total = 0
        cdef Py_ssize_t j
        for j in range(self.num_gpus[n]):
            total += self.gpu_free[n, j]
        return total

    cdef long long tightest_gpu(self, Py_ssize_t n, long long milli) noexcept nogil:
        """The GPU with the least free share that holds ``milli`` (lowest index first)."""
        cdef long long best = -1
        cdef Py_ssize_t j
        for j in range(self.num_gpus[n]):
            if self.gpu_free[n, j] >= milli and (best < 0 or self.gpu_free[n, j] < self.gpu_free[n, best]):
                best = j
        return best

    cdef long long idle_gpus(self, Py_ssize_t n, long long count) noexcept nogil:
        """Bit mask of the first ``count`` idle GPUs in index order."""
        cdef long long mask = 0, taken = 0
        cdef Py_ssize_t j
        for j in range(self.num_gpus[n]):
            if taken == count:
                break
            if self.gpu_free[n, j] == MILLI:
                mask |= (<long long>1) << j
                taken += 1
        return mask

    cdef long long best_fit_gpus(self, Py_ssize_t n, long long num, long long milli) noexcept nogil:
        if milli == 0:
            return 0
        if num == 1 and milli < MILLI:
            return (<long long>1) << self.tightest_gpu(n, milli)
        return self.idle_gpus(n, num)

    # -- the policies' scores ----------------------------------------------------------------

    cdef long long dotprod(self, Py_ssize_t n, long long cpu, long long total_milli) noexcept nogil:
        cdef double dot = (<double>self.cpu_free[n] / MAX_SPEC_CPU) * (<double>cpu / MAX_SPEC_CPU) + (
            <double>self.free_total(n) / MAX_SPEC_GPU) * (<double>total_milli / MAX_SPEC_GPU)
        return <long long>(MAX_SCORE * (1 - dot / 2))

    cdef long long clustering(self, Py_ssize_t n, long long tag) noexcept nogil:
        cdef long long kinds = self.affinity[n], quarter = MAX_SCORE // 4, band
        cdef long long fullness
        if tag == 0:
            return 0
        fullness = quarter * (MAX_SPEC_GPU - self.free_total(n)) / MAX_SPEC_GPU
        if kinds & tag:
            band = 3 if kinds == tag else 2
        else:
            band = 1 if kinds == 0 else 0
        return fullness + band * quarter

    cdef long long packing(self, Py_ssize_t n, long long num, long long milli) noexcept nogil:
        cdef long long idle = 0, chosen, free, score
        cdef Py_ssize_t j
        if milli == 0:
            return 0
        for j in range(self.num_gpus[n]):
            if self.gpu_free[n, j] == MILLI:
                idle += 1
        if idle == self.num_gpus[n]:
            score = MAX_SCORE // 3 - idle
            return score if score > idle else idle
        if milli == MILLI:  # whole GPUs: only idle ones hold them
            score = MAX_SCORE // 2 - num
            return score if score > MAX_SCORE // 3 else MAX_SCORE // 3
        chosen = self.tightest_gpu(n, milli)
        free = self.gpu_free[n, chosen]
        if free == MILLI:
            score = MAX_SCORE // 2 - 1
            return score if score > MAX_SCORE // 3 else MAX_SCORE // 3
        score = MAX_SCORE - (free * 100 / MILLI) / 10
        return score if score > MAX_SCORE // 2 else MAX_SCORE // 2

    cdef long long bestfit(self, Py_ssize_t n, long long cpu, long long total_milli) noexcept nogil:
        cdef double left_over = <double>(self.cpu_free[n] - cpu) / MAX_SPEC_CPU * 0.5 + <double>(
            self.free_total(n) - total_milli) / MAX_SPEC_GPU * 0.5
        return <long long>((1.0 - left_over) * MAX_SCORE)

    cdef long long fgd(self, Py_ssize_t n, long long kind, long long cpu, long long num,
                       long long milli) noexcept nogil:
        """FGD's score of node ``n``; the chosen GPUs' mask goes to ``cached_gpu``."""
        cdef double before, after
        cdef long long best = -1, score, mask = 0
        cdef Py_ssize_t j, count
        cdef long long* after_free = &self.after[0]
        if self.cached_version[kind, n] == self.version[n]:
            return self.cached_score[kind, n]
        count = self.num_gpus[n]
        before = self.fragment[n]
        for j in range(count):
            after_free[j] = self.gpu_free[n, j]
        if num == 1 and 0 < milli < MILLI:
            for j in range(count):
                if self.gpu_free[n, j] < milli:
                    continue
                after_free[j] -= milli
                after = self.node_fragment(
                    self.cpu_free[n] - cpu, self.model_bit[n], after_free, count)
                after_free[j] += milli
                score = <long long>(1.0 / (1.0 + exp(-(before - after) / MILLI)) * MAX_SCORE)
                if best < 0 or score > best:
                    best = score
                    mask = (<long long>1) << j
        else:
            mask = self.idle_gpus(n, num) if milli > 0 else 0
            for j in range(count):
                if (mask >> j) & 1:
                    after_free[j] -= milli
            after = self.node_fragment(self.cpu_free[n] - cpu, self.model_bit[n], after_free, count)
            best = <long long>(1.0 / (1.0 + exp(-(before - after) / MILLI)) * MAX_SCORE)
        self.cached_score[kind, n] = best
        self.cached_gpu[kind, n] = mask
        self.cached_version[kind, n] = self.version[n]
        return best

    # -- one task ------------------------------------------------------------------------

    cdef long long choose(self, int policy, long long cpu, long long memory, long long num,
                          long long milli, long long spec, long long kind, double node_draw,
                          double gpu_draw, long long* gpus) noexcept nogil:
        """Place one task; its node (-1: none fits) and, in ``gpus``, its GPUs' mask."""
        cdef Py_ssize_t n, i, count = 0, holding
        cdef long long best_node = -1, best_score = 0, score, lowest = 0, highest = 0
        cdef long long tag = 0, total_milli = num * milli
        if milli > 0:
            tag = 1 if (num == 1 and milli < MILLI) else (<long long>1) << num
        for n in range(self.num_nodes):
            if self.fits(n, cpu, memory, num, milli, spec):
                self.feasible[count] = n
                count += 1
        if count == 0:
            return -1
        if policy == RANDOM:
            best_node = self.feasible[<Py_ssize_t>(node_draw * count)]
        elif policy == BESTFIT:
            for i in range(count):
                score = self.bestfit(self.feasible[i], cpu, total_milli)
                self.raw[i] = score
                if i == 0 or score < lowest:
                    lowest = score
                if i == 0 or score > highest:
                    highest = score
        for i in range(count):
            if policy == RANDOM:
                break
            n = self.feasible[i]
            if policy == DOTPROD:
                score = self.dotprod(n, cpu, total_milli)
            elif policy == CLUSTERING:
                score = self.clustering(n, tag)
            elif policy == PACKING:
                score = self.packing(n, num, milli)
            elif policy == BESTFIT:
                score = 0 if highest == lowest else (
                    (self.raw[i] - lowest) * MAX_SCORE / (highest - lowest))
            else:
                score = self.fgd(n, kind, cpu, num, milli)
            if best_node < 0 or score > best_score or (
                    score == best_score and self.tie_rank[n] < self.tie_rank[best_node]):
                best_node = n
                best_score = score
        n = best_node
        if policy == FGD:
            gpus[0] = self.cached_gpu[kind, n]
        elif policy == RANDOM and num == 1 and 0 < milli < MILLI:
            holding = 0
            for i in range(self.num_gpus[n]):
                if self.gpu_free[n, i] >= milli:
                    holding += 1
            holding = <Py_ssize_t>(gpu_draw * holding)
            for i in range(self.num_gpus[n]):
                if self.gpu_free[n, i] >= milli:
                    if holding == 0:
                        gpus[0] = (<long long>1) << i
                        break
                    holding -= 1
        else:
            gpus[0] = self.best_fit_gpus(n, num, milli)
        self.cpu_free[n] -= cpu
        self.memory_free[n] -= memory
        for i in range(self.num_gpus[n]):
            if (gpus[0] >> i) & 1:
                self.gpu_free[n, i] -= milli
        self.affinity[n] |= tag
        self.version[n] += 1
        self.fragment[n] = self.node_fragment(
            self.cpu_free[n], self.model_bit[n], &self.gpu_free[n, 0], self.num_gpus[n])
        return n


def place_all(
    int policy,
    cpu_capacity, memory_capacity, num_gpus, model_bit, tie_rank,
    long long[::1] cpu, long long[::1] memory, long long[::1] num_gpu,
    long long[::1] gpu_milli, long long[::1] gpu_spec, long long[::1] kind,
    typical_cpu, typical_num, typical_milli, typical_spec, typical_frequency,
    double[:, ::1] draws,
):
    """Place ``cpu.shape[0]`` tasks in order on an empty cluster by policy code ``policy``.

    Args:
        policy: A value of :data:`POLICY_CODES`.
        cpu_capacity, memory_capacity, num_gpus: Per node.  (N,)
        model_bit: ``1 << model index`` per node, 0 on a CPU node.  (N,)
        tie_rank: Tie-break order, a permutation of 0..N-1.  (N,)
        cpu, memory, num_gpu, gpu_milli: The tasks' requests, in arrival order.  (M,)
        gpu_spec: Mask of accepted model bits, with bit 62 set; 0: any model.  (M,)
        kind: Index of the task's (cpu, num_gpu, gpu_milli, gpu_spec), 0..K-1.  (M,)
        typical_*: The target workload (``fragmentation.typical_tasks``).  (T,)
        draws: Two uniform numbers in [0, 1) per task (``random``'s node and GPU).  (M, 2)

    Returns:
        A dict of arrays: ``node`` (M,) the node of each task or -1, ``gpus`` (M,) the
        mask of its GPUs, ``allocated`` (M,) GPU shares handed out after each task
        [milli-GPU], ``fragmentation`` (M,) the cluster's fragment after each task
        [milli-GPU], and the final ``cpu_free``, ``memory_free`` (N,) and ``gpu_free``
        (N, G).
    """
    cdef Py_ssize_t count = cpu.shape[0], i, num_kinds = 0
    if count:
        num_kinds = int(np.max(kind)) + 1
    if policy not in POLICY_CODES.values():
        raise ValueError(f"unknown policy code {policy}")
    if draws.shape[0] != count or (count and draws.shape[1] != 2):
        raise ValueError(f"draws must be ({count}, 2), got {tuple(draws.shape)[:2]}")
    cdef _Placer placer = _Placer(
        cpu_capacity, memory_capacity, num_gpus, model_bit, tie_rank,
        typical_cpu, typical_num, typical_milli, typical_spec, typical_frequency, num_kinds,
    )
    node_of = np.full(count, -1, dtype=np.int64)
    gpus_of = np.zeros(count, dtype=np.int64)
    allocated = np.zeros(count, dtype=np.int64)
    fragmentation = np.zeros(count, dtype=np.float64)
    cdef long long[::1] node_view = node_of, gpus_view = gpus_of, allocated_view = allocated
    cdef double[::1] fragmentation_view = fragmentation
    cdef long long handed_out = 0, gpus = 0, node
    cdef double total
    cdef Py_ssize_t n
    with nogil:
        for i in range(count):
            gpus = 0
            node = placer.choose(policy, cpu[i], memory[i], num_gpu[i], gpu_milli[i],
                                 gpu_spec[i], kind[i], draws[i, 0], draws[i, 1], &gpus)
            if node >= 0:
                node_view[i] = node
                gpus_view[i] = gpus
                handed_out += num_gpu[i] * gpu_milli[i]
            allocated_view[i] = handed_out
            total = 0.0
            for n in range(placer.num_nodes):
                total += placer.fragment[n]
            fragmentation_view[i] = total
    return {
        "node": node_of,
        "gpus": gpus_of,
        "allocated": allocated,
        "fragmentation": fragmentation,
        "cpu_free": np.asarray(placer.cpu_free).copy(),
        "memory_free": np.asarray(placer.memory_free).copy(),
        "gpu_free": np.asarray(placer.gpu_free).copy(),
    }
