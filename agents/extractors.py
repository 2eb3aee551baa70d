"""Feature extractors for ``GPUShare-v0``'s ``Dict`` observation.

``flat`` is SB3's ``CombinedExtractor`` (every box flattened and concatenated; the MLP
sees slot ``i`` of the pending window at fixed inputs). ``perm`` is
:class:`PermutationExtractor`: one small MLP shared by all rows of a table (GPUs, pending
slots, running slots), pooled with a masked mean and max over the valid rows, so the
summary of a table does not depend on the order of its rows nor on its padding. Because
the action space addresses slots by index, the extractor can also append a short
per-slot code (``slot_dim`` numbers per pending / running slot, zero for empty slots)
that moves with its row: the pooled part is permutation invariant, the per-slot part
permutation equivariant.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from gpushare_env.envs.observation import GPU_FEATURES, PENDING_FEATURES, RUNNING_FEATURES

__all__ = ["EXTRACTORS", "PermutationExtractor", "masked_mean_max"]

#: Names accepted by ``--extractor``.
EXTRACTORS: tuple[str, ...] = ("flat", "perm", "pointer")

_VALID = PENDING_FEATURES.index("valid")


def masked_mean_max(rows: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean and max of ``rows`` over the rows where ``mask`` is 1 (zeros if none).

    Args:
        rows: Encoded rows.  # (B, N, D)
        mask: 1 for valid rows, 0 for padding.  # (B, N)

    Returns:
        ``[mean, max]`` concatenated.  # (B, 2 D)
    """
    weights = mask.unsqueeze(-1)
    count = weights.sum(dim=1)
    mean = (rows * weights).sum(dim=1) / count.clamp(min=1.0)
    masked = rows.masked_fill(weights <= 0, float("-inf"))
    maximum = masked.max(dim=1).values
    maximum = torch.where(count > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


def _row_encoder(in_dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())


class PermutationExtractor(BaseFeaturesExtractor):
    """Shared per-row encoders with masked mean + max pooling (Deep Sets).

    Output: ``[pool(gpus), pool(pending), pool(running), frag_hist, global,
    pending slot codes, running slot codes]`` of size ``6 row_dim + 25 + slot_dim (W + R)``.

    Args:
        observation_space: ``GPUShare-v0``'s ``Dict`` space.
        row_dim: Width of each row encoder (hidden and output).
        slot_dim: Per-slot code length appended for the pending and running windows
            (0: a fully permutation-invariant output).
        running_columns: Columns of a running row (``running_features`` of the env's
            observation options; default: the standard ones).
        pending_columns: Columns of a pending row (``pending_features`` of the env's
            observation options; default: the standard ones).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        row_dim: int = 64,
        slot_dim: int = 4,
        running_columns: int = len(RUNNING_FEATURES),
        pending_columns: int = len(PENDING_FEATURES),
    ):
        sizes = {key: int(np.prod(space.shape or (0,))) for key, space in observation_space.items()}
        self.num_gpus = sizes["gpus"] // len(GPU_FEATURES)
        for key, columns in (("pending", pending_columns), ("running", running_columns)):
            if sizes[key] % columns:
                raise ValueError(
                    f"PermutationExtractor: obs[{key!r}] has {sizes[key]} entries, not a "
                    f"multiple of {key}_columns={columns}"
                )
        self.pending_columns = pending_columns
        self.pending_window = sizes["pending"] // pending_columns
        self.running_columns = running_columns
        self.running_window = sizes["running"] // running_columns
        extra = sizes["frag_hist"] + sizes["global"]
        slots = self.pending_window + self.running_window
        super().__init__(observation_space, features_dim=6 * row_dim + extra + slot_dim * slots)
        self.slot_dim = slot_dim
        self.gpu_encoder = _row_encoder(len(GPU_FEATURES), row_dim)
        self.pending_encoder = _row_encoder(pending_columns, row_dim)
        self.running_encoder = _row_encoder(running_columns, row_dim)
        if slot_dim > 0:
            self.pending_code = nn.Linear(row_dim, slot_dim)
            self.running_code = nn.Linear(row_dim, slot_dim)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encode a batch of observations.  # (B, features_dim)"""
        batch = observations["gpus"].shape[0]
        gpus = observations["gpus"].reshape(batch, self.num_gpus, len(GPU_FEATURES))
        pending = observations["pending"].reshape(batch, self.pending_window, self.pending_columns)
        running = observations["running"].reshape(batch, self.running_window, self.running_columns)
        pending_mask = pending[..., _VALID]
        running_mask = running[..., _VALID]
        gpu_rows = self.gpu_encoder(gpus)
        pending_rows = self.pending_encoder(pending)
        running_rows = self.running_encoder(running)
        parts = [
            masked_mean_max(gpu_rows, torch.ones_like(gpus[..., 0])),
            masked_mean_max(pending_rows, pending_mask),
            masked_mean_max(running_rows, running_mask),
            observations["frag_hist"],
            observations["global"],
        ]
        if self.slot_dim > 0:
            parts.append((self.pending_code(pending_rows) * pending_mask.unsqueeze(-1)).flatten(1))
            parts.append((self.running_code(running_rows) * running_mask.unsqueeze(-1)).flatten(1))
        return torch.cat(parts, dim=-1)
