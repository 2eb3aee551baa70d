"""Renderers of ``GPUShare-v0``: a text view and an RGB picture, numpy only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpushare_env.sim.types import JobStatus

if TYPE_CHECKING:
    from gpushare_env.sim.engine import Simulator
    from gpushare_env.sim.view import SimView

__all__ = ["render_ansi", "render_rgb"]

_CELL = 24  # [px] side of one GPU's square
_GAP = 2  # [px] between squares
_MAX_ANSI_GPUS = 256  # larger clusters are summarised by node
_MAX_ANSI_JOBS = 8


def _gpu_glyph(free: float, capacity: float, workers: int, max_workers: int) -> str:
    used = 1.0 - free / capacity
    filled = round(used * 4)
    return "[" + "#" * filled + "." * (4 - filled) + f"]{workers}"


def render_ansi(
    sim: Simulator, view: SimView, pending_ids: list[int], running_ids: list[int]
) -> str:
    """A readable text view: time and totals, GPUs by node, the pending and running windows.

    Each GPU shows its used memory in quarters (``#``) and its number of workers, e.g.
    ``[##..]2``; clusters larger than 256 GPUs are summarised one line per node.
    """
    cluster = sim.cluster
    free = view.free_memory_gib
    holders = view.holders
    util, allocated, free_total, fragmented, _ = view.cluster_totals()
    lines = [
        f"t = {sim.now_s:,.1f} s | jobs: {view.num_waiting} waiting, {view.num_running} running, "
        f"{len(view.in_transition())} suspending/resuming, {sim.num_finished}/{len(sim.jobs)} "
        f"finished",
        f"GPUs: {allocated}/{cluster.num_gpus} allocated, utilisation "
        f"{util / cluster.num_gpus:.2f}, free {free_total:.1f} GiB "
        f"({fragmented:.1f} GiB fragmented)",
    ]
    max_workers = cluster.max_jobs_per_gpu
    for node, row in enumerate(cluster.node_gpus):
        gpus = [int(g) for g in row if g >= 0]
        if cluster.num_gpus <= _MAX_ANSI_GPUS:
            cells = " ".join(
                _gpu_glyph(
                    float(free[g]), float(cluster.gpu_memory_gib[g]), int(holders[g]), max_workers
                )
                for g in gpus
            )
            lines.append(f"node {node:3d}: {cells}")
        else:
            busy = sum(1 for g in gpus if holders[g] > 0)
            mem = sum(float(cluster.gpu_memory_gib[g] - free[g]) for g in gpus)
            lines.append(f"node {node:4d}: {busy}/{len(gpus)} GPUs busy, {mem:.1f} GiB used")
    lines.append(f"pending window ({len(pending_ids)} of {view.num_waiting}):")
    for slot, job_id in enumerate(pending_ids[:_MAX_ANSI_JOBS]):
        job = view.job(job_id)
        flag = " suspended" if job.status == JobStatus.SUSPENDED else ""
        lines.append(
            f"  [{slot:2d}] job {job_id}: {job.model} x{job.num_gpus} {job.memory_gib:g} GiB, "
            f"waiting {job.wait_s:,.0f} s, progress {job.progress:.0%}{flag}"
        )
    if len(pending_ids) > _MAX_ANSI_JOBS:
        lines.append(f"  ... {len(pending_ids) - _MAX_ANSI_JOBS} more")
    lines.append(f"running window ({len(running_ids)} of {view.num_running}):")
    for slot, job_id in enumerate(running_ids[:_MAX_ANSI_JOBS]):
        job = view.job(job_id)
        lines.append(
            f"  [{slot:2d}] job {job_id}: {job.model} x{job.num_gpus} on GPUs {list(job.gpus)}, "
            f"speed {job.speed:.2f}, progress {job.progress:.0%}"
        )
    if len(running_ids) > _MAX_ANSI_JOBS:
        lines.append(f"  ... {len(running_ids) - _MAX_ANSI_JOBS} more")
    return "\n".join(lines) + "\n"


def render_rgb(sim: Simulator) -> np.ndarray:
    """A picture of GPU occupancy: one row of squares per node, one square per GPU.

    A square fills from the bottom with its used memory; the fill goes from green
    (compute load 0) to red (load >= 1, contended); the top strip has one white tick per
    worker. Idle GPUs are dark grey.

    Returns:
        An ``(H, W, 3)`` ``uint8`` image.  # (nodes * 26 + 2, gpus_per_node * 26 + 2, 3)
    """
    cluster = sim.cluster
    node_gpus = cluster.node_gpus  # (N, M), -1 padded
    num_nodes, width = node_gpus.shape
    step = _CELL + _GAP
    image = np.full((num_nodes * step + _GAP, width * step + _GAP, 3), 16, dtype=np.uint8)
    free = sim.gpus.free_memory_gib
    load = sim.gpus.load
    holders = sim.gpus.holders
    used = 1.0 - free / cluster.gpu_memory_gib  # (G,)
    filled = np.rint(used * _CELL).astype(np.int64)
    heat = np.minimum(load, 1.0)
    colour = np.stack([60 + 195 * heat, 200 - 150 * heat, np.full_like(heat, 60.0)], axis=1).astype(
        np.uint8
    )  # (G, 3)
    tick = max(1, _CELL // (2 * cluster.max_jobs_per_gpu))
    for node in range(num_nodes):
        for col in range(width):
            g = int(node_gpus[node, col])
            if g < 0:
                continue
            top = _GAP + node * step
            left = _GAP + col * step
            cell = image[top : top + _CELL, left : left + _CELL]
            cell[:] = 48
            if filled[g] > 0:
                cell[_CELL - filled[g] :] = colour[g]
            for k in range(int(holders[g])):
                cell[:3, 2 * k * tick : (2 * k + 1) * tick] = 255
    return image
