"""The published figures of FGD's experiment, for the reproduction to print beside its own.

Unallocated GPU share (100 - GPU allocation ratio, %) at 90, 95, 100, 110, 120 and 130%
arrived workload, the median over the artifact's 10 seeds (42-51), per pod list and
policy. Derived from the per-seed results Weng et al. publish with their simulator,
``hkust-adsl/kubernetes-scheduler-simulator`` (Apache-2.0),
``experiments/analysis/expected_results/analysis_allo_discrete.csv``: the figures behind
the paper's Fig. 9(a) (``default``) and Figs. 11-14 (the other lists). Cite: Q. Weng et al.,
"Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent", USENIX ATC 2023.
"""

from __future__ import annotations

__all__ = ["ARRIVED_POINTS", "PUBLISHED_UNALLOCATED_PCT", "published_unallocated"]

#: Arrived workloads (% of the cluster's GPU capacity) the figures are given at.
ARRIVED_POINTS: tuple[int, ...] = (90, 95, 100, 110, 120, 130)

#: Pod list (file stem) -> policy -> unallocated GPU % at :data:`ARRIVED_POINTS`.
PUBLISHED_UNALLOCATED_PCT: dict[str, dict[str, tuple[float, ...]]] = {
    "openb_pod_list_default": {
        "random": (14.97, 14.32, 13.75, 13.23, 12.84, 12.62),
        "dotprod": (10.02, 9.48, 9.45, 9.37, 9.29, 9.20),
        "clustering": (10.00, 8.47, 8.42, 8.34, 8.27, 8.21),
        "packing": (10.00, 8.23, 8.20, 8.12, 8.05, 7.94),
        "bestfit": (9.99, 7.14, 7.09, 7.02, 6.96, 6.89),
        "fgd": (10.00, 5.09, 4.77, 4.68, 4.63, 4.60),
    },
    "openb_pod_list_cpu050": {
        "random": (12.59, 11.72, 11.02, 9.79, 9.18, 8.84),
        "dotprod": (9.99, 6.97, 6.94, 6.86, 6.79, 6.71),
        "clustering": (9.99, 6.56, 6.52, 6.40, 6.30, 6.21),
        "packing": (9.99, 6.51, 6.47, 6.36, 6.29, 6.21),
        "bestfit": (9.99, 6.45, 6.42, 6.32, 6.25, 6.18),
        "fgd": (9.99, 5.20, 5.00, 4.93, 4.87, 4.80),
    },
    "openb_pod_list_cpu100": {
        "random": (13.91, 13.13, 12.56, 11.60, 11.10, 10.83),
        "dotprod": (10.01, 8.27, 8.22, 8.16, 8.06, 7.98),
        "clustering": (10.01, 7.49, 7.46, 7.37, 7.30, 7.19),
        "packing": (10.01, 7.48, 7.45, 7.37, 7.26, 7.19),
        "bestfit": (10.01, 6.74, 6.72, 6.64, 6.58, 6.54),
        "fgd": (10.01, 5.09, 4.79, 4.73, 4.70, 4.66),
    },
    "openb_pod_list_cpu200": {
        "random": (17.67, 17.35, 17.01, 16.53, 16.38, 16.30),
        "dotprod": (12.33, 12.28, 12.24, 12.15, 12.07, 11.99),
        "clustering": (10.34, 10.29, 10.25, 10.14, 10.06, 9.98),
        "packing": (10.10, 9.93, 9.87, 9.77, 9.68, 9.62),
        "bestfit": (10.01, 7.91, 7.85, 7.75, 7.68, 7.58),
        "fgd": (10.01, 5.31, 5.18, 5.08, 5.00, 4.92),
    },
    "openb_pod_list_cpu250": {
        "random": (20.57, 20.28, 20.06, 19.85, 19.77, 19.70),
        "dotprod": (16.32, 16.27, 16.22, 16.16, 16.06, 15.96),
        "clustering": (12.58, 12.55, 12.48, 12.41, 12.34, 12.26),
        "packing": (12.00, 11.96, 11.92, 11.84, 11.76, 11.69),
        "bestfit": (10.01, 8.77, 8.70, 8.63, 8.57, 8.50),
        "fgd": (10.02, 6.84, 6.80, 6.73, 6.66, 6.59),
    },
    "openb_pod_list_gpushare40": {
        "random": (16.45, 15.52, 15.04, 14.50, 14.09, 13.97),
        "dotprod": (10.79, 10.73, 10.66, 10.56, 10.48, 10.42),
        "clustering": (10.37, 10.23, 10.18, 10.09, 10.01, 9.94),
        "packing": (10.35, 10.24, 10.19, 10.10, 9.99, 9.93),
        "bestfit": (10.01, 8.57, 8.53, 8.45, 8.35, 8.27),
        "fgd": (10.01, 6.09, 6.05, 5.98, 5.91, 5.86),
    },
    "openb_pod_list_gpushare60": {
        "random": (18.15, 17.62, 17.22, 16.70, 16.49, 16.35),
        "dotprod": (13.25, 13.22, 13.17, 13.08, 12.95, 12.83),
        "clustering": (13.13, 13.07, 13.03, 12.96, 12.86, 12.77),
        "packing": (12.88, 12.82, 12.75, 12.69, 12.59, 12.48),
        "bestfit": (11.02, 10.98, 10.91, 10.84, 10.75, 10.65),
        "fgd": (10.01, 8.73, 8.70, 8.68, 8.63, 8.59),
    },
    "openb_pod_list_gpushare80": {
        "random": (20.30, 19.84, 19.35, 19.04, 18.90, 18.75),
        "dotprod": (16.02, 15.96, 15.89, 15.78, 15.65, 15.53),
        "clustering": (15.60, 15.53, 15.45, 15.35, 15.23, 15.08),
        "packing": (15.42, 15.36, 15.28, 15.19, 15.06, 14.94),
        "bestfit": (13.40, 13.33, 13.27, 13.16, 13.06, 12.94),
        "fgd": (11.03, 10.98, 10.91, 10.81, 10.76, 10.69),
    },
    "openb_pod_list_gpushare100": {
        "random": (21.75, 21.30, 21.07, 20.84, 20.67, 20.53),
        "dotprod": (18.10, 18.01, 17.93, 17.82, 17.68, 17.53),
        "clustering": (17.85, 17.77, 17.70, 17.55, 17.41, 17.30),
        "packing": (17.93, 17.86, 17.78, 17.64, 17.50, 17.36),
        "bestfit": (15.55, 15.48, 15.40, 15.27, 15.12, 14.99),
        "fgd": (13.46, 13.41, 13.36, 13.28, 13.19, 13.09),
    },
    "openb_pod_list_gpuspec10": {
        "random": (15.10, 14.30, 13.69, 13.10, 12.71, 12.49),
        "dotprod": (15.16, 10.53, 9.75, 9.70, 9.65, 9.56),
        "clustering": (14.62, 9.99, 8.05, 7.98, 7.91, 7.82),
        "packing": (14.62, 9.99, 7.77, 7.70, 7.64, 7.57),
        "bestfit": (15.06, 10.44, 6.88, 6.81, 6.75, 6.67),
        "fgd": (14.18, 9.62, 5.30, 5.18, 5.12, 5.06),
    },
    "openb_pod_list_gpuspec20": {
        "random": (16.56, 14.66, 13.91, 13.20, 12.81, 12.60),
        "dotprod": (20.14, 15.96, 11.68, 10.19, 10.12, 10.03),
        "clustering": (19.22, 15.10, 10.87, 7.94, 7.88, 7.77),
        "packing": (18.97, 14.83, 10.65, 7.14, 7.06, 6.95),
        "bestfit": (19.96, 15.78, 11.54, 6.88, 6.81, 6.74),
        "fgd": (13.79, 9.20, 5.31, 5.25, 5.18, 5.14),
    },
    "openb_pod_list_gpuspec25": {
        "random": (18.48, 15.63, 14.59, 13.75, 13.38, 13.12),
        "dotprod": (22.56, 18.52, 14.55, 10.48, 10.42, 10.34),
        "clustering": (21.48, 17.56, 13.59, 8.12, 8.06, 8.00),
        "packing": (21.09, 17.16, 13.22, 7.15, 7.09, 6.98),
        "bestfit": (22.37, 18.35, 14.30, 6.91, 6.84, 6.78),
        "fgd": (14.78, 10.18, 6.08, 5.29, 5.24, 5.20),
    },
    "openb_pod_list_gpuspec33": {
        "random": (22.60, 19.19, 16.19, 14.49, 13.96, 13.57),
        "dotprod": (27.38, 23.73, 20.17, 12.80, 10.96, 10.89),
        "clustering": (26.20, 22.54, 18.96, 11.57, 8.06, 7.98),
        "packing": (24.89, 21.28, 17.67, 10.48, 6.85, 6.77),
        "bestfit": (26.87, 23.18, 19.59, 12.20, 6.98, 6.91),
        "fgd": (19.34, 15.73, 12.12, 5.56, 5.51, 5.44),
    },
    "openb_pod_list_multigpu20": {
        "random": (16.02, 14.07, 13.16, 12.18, 11.63, 11.35),
        "dotprod": (10.00, 8.21, 8.19, 8.11, 8.05, 7.98),
        "clustering": (10.00, 6.65, 6.62, 6.52, 6.46, 6.41),
        "packing": (10.00, 6.55, 6.49, 6.43, 6.35, 6.25),
        "bestfit": (9.99, 6.30, 6.27, 6.21, 6.17, 6.10),
        "fgd": (9.99, 5.05, 4.47, 4.42, 4.38, 4.35),
    },
    "openb_pod_list_multigpu30": {
        "random": (19.38, 15.93, 13.43, 12.03, 11.25, 10.80),
        "dotprod": (9.98, 7.01, 6.98, 6.91, 6.83, 6.77),
        "clustering": (9.99, 5.55, 5.45, 5.40, 5.33, 5.27),
        "packing": (9.99, 5.32, 5.23, 5.16, 5.09, 5.04),
        "bestfit": (9.98, 5.52, 5.47, 5.43, 5.39, 5.36),
        "fgd": (9.98, 5.00, 3.61, 3.58, 3.55, 3.52),
    },
    "openb_pod_list_multigpu40": {
        "random": (21.43, 17.91, 14.77, 11.53, 10.56, 9.98),
        "dotprod": (10.02, 5.95, 5.91, 5.86, 5.83, 5.78),
        "clustering": (10.02, 5.20, 4.53, 4.48, 4.44, 4.37),
        "packing": (10.02, 5.03, 4.43, 4.36, 4.32, 4.26),
        "bestfit": (10.02, 5.10, 4.91, 4.87, 4.82, 4.79),
        "fgd": (10.02, 5.04, 3.10, 3.07, 3.03, 3.00),
    },
    "openb_pod_list_multigpu50": {
        "random": (24.79, 21.77, 18.61, 12.98, 10.59, 9.77),
        "dotprod": (10.07, 5.45, 5.24, 5.23, 5.17, 5.12),
        "clustering": (10.13, 5.27, 4.36, 4.31, 4.26, 4.23),
        "packing": (10.07, 5.20, 3.93, 3.89, 3.85, 3.82),
        "bestfit": (10.06, 4.98, 4.42, 4.39, 4.34, 4.30),
        "fgd": (10.07, 5.07, 2.91, 2.88, 2.84, 2.83),
    },
}


def published_unallocated(workload: str, policy: str) -> tuple[float, ...] | None:
    """The published figures of ``policy`` on pod list ``workload`` (file stem), if any."""
    return PUBLISHED_UNALLOCATED_PCT.get(workload, {}).get(policy)
