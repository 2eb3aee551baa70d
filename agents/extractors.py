"""Feature extractors for ``GPUShare-v0``'s ``Dict`` observation.

``flat`` is SB3's ``CombinedExtractor`` (every box flattened and concatenated; the MLP
sees slot ``i`` of the pending window at fixed inputs). ``perm`` is
:class:`PermutationExtractor`: one small MLP shared by all rows of a table (GPUs, pending
slots, running slots), pooled with a masked mean and max over the valid rows, so the
summary of a table does not depend on the order of its rows nor on its padding (empty
slots; the zero GPU rows of ``gpu_rows``). Because
the action space addresses slots by index, the extractor can also append a short
per-slot code (``slot_dim`` numbers per pending / running slot, zero for empty slots)
that moves with its row: the pooled part is permutation invariant, the per-slot part
permutation equivariant.

Speed: a table's rows repeat a great deal (a 64-GPU cluster in a minibatch of 512
states has some tens to a few thousand distinct GPU rows among 32,768; empty slots are
all zeros), so on large batches each encoder runs once per *distinct* row and the
pooling works on the distinct (state, row) pairs (:func:`pool_table`): the same values,
far fewer multiplications and no tensor of every row's encoding, in the forward and the
backward pass alike.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from gpushare_env.envs.observation import GPU_FEATURES, PENDING_FEATURES, RUNNING_FEATURES

__all__ = ["EXTRACTORS", "PermutationExtractor", "distinct_rows", "masked_mean_max", "pool_table"]

#: Names accepted by ``--extractor``.
EXTRACTORS: tuple[str, ...] = ("flat", "perm", "pointer")

_VALID = PENDING_FEATURES.index("valid")

#: A GPU row's column that is > 0 for every GPU and 0 on the padding rows of
#: ``gpu_rows`` (``windows.gpus``).
_GPU_VALID = GPU_FEATURES.index("capacity")

#: Fewest rows for which :func:`distinct_rows` looks for repeats (below it, as on the
#: rollouts' batches of a few states, the search costs more than it saves).
DEDUP_MIN_ROWS = 2048

#: Weights of the row key (fractional parts of the square roots of the first primes: any
#: fixed weights that are not rationally related will do; a collision is detected).
_KEY_WEIGHTS = torch.tensor(
    [math.sqrt(p) % 1.0 for p in range(2, 1000) if all(p % d for d in range(2, p))][:128],
    dtype=torch.float64,
)


def masked_mean_max(
    rows: torch.Tensor, mask: torch.Tensor, *, nonnegative: bool = False
) -> torch.Tensor:
    """Mean and max of ``rows`` over the rows where ``mask`` is 1 (zeros if none).

    Args:
        rows: Encoded rows.  # (B, N, D)
        mask: 1 for valid rows, 0 for padding.  # (B, N)
        nonnegative: ``rows`` are all >= 0 (a ReLU's output): the max is then that of the
            rows times the mask, the same value without a pass that fills the padding.

    Returns:
        ``[mean, max]`` concatenated.  # (B, 2 D)
    """
    weights = mask.unsqueeze(-1)
    count = weights.sum(dim=1)
    kept = rows * weights
    mean = kept.sum(dim=1) / count.clamp(min=1.0)
    if nonnegative:
        return torch.cat([mean, kept.max(dim=1).values], dim=-1)
    masked = rows.masked_fill(weights <= 0, float("-inf"))
    maximum = masked.max(dim=1).values
    maximum = torch.where(count > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The distinct rows of ``rows`` and where each row is among them, or ``None``.

    Rows are keyed by a fixed linear hash in float64 and the keys sorted
    (``torch.unique``); the answer is checked exactly, and ``None`` returned if two
    different rows ever share a key (or there are too few rows to gain).

    Args:
        rows: Rows.  # (N, C)

    Returns:
        ``(representatives, inverse)`` with ``representatives[inverse] == rows``.  # (U, C), (N,)
    """
    if rows.shape[0] < DEDUP_MIN_ROWS or rows.shape[1] > len(_KEY_WEIGHTS):
        return None
    with torch.no_grad():
        keys = rows.double() @ _KEY_WEIGHTS[: rows.shape[1]]
        unique, inverse = torch.unique(keys, return_inverse=True)
        first = torch.zeros(len(unique), dtype=torch.long).scatter_reduce(
            0, inverse, torch.arange(rows.shape[0]), reduce="amin", include_self=False
        )
        representatives = rows.index_select(0, first)
        if not torch.equal(representatives.index_select(0, inverse), rows):
            return None
    return representatives, inverse


def pool_table(
    encoder: nn.Module,
    rows: torch.Tensor,
    valid_column: int | None = None,
    code: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Encode a table's rows, pool them, and give each slot its code.

    The same values as ``masked_mean_max(encoder(rows), mask)`` and
    ``code(encoder(rows)) * mask``, for an ``encoder`` whose output is >= 0 (ends with a
    ReLU). On large batches (:func:`distinct_rows`) the encoder runs once per distinct row
    and the pooling sums and maxes over the distinct (state, row) pairs, so no tensor of
    every row's encoding is built, in the forward pass or the backward.

    Args:
        encoder: Row encoder, ``C -> D``, output >= 0.
        rows: The table.  # (B, N, C)
        valid_column: Column that is > 0 on valid rows and 0 on padding (``None``: every
            row is valid).
        code: Per-slot code layer, ``D -> S`` (``None``: no codes).

    Returns:
        ``[mean, max]`` of the valid rows' encodings, and the slot codes (zero on
        padding) or ``None``.  # (B, 2 D), (B, N, S)
    """
    batch, slots, columns = rows.shape
    flat = rows.reshape(batch * slots, columns)
    found = distinct_rows(flat)
    if found is None:
        encoded = encoder(rows)
        mask = (
            torch.ones_like(rows[..., 0])
            if valid_column is None
            else (rows[..., valid_column] > 0).to(rows.dtype)
        )
        codes = None if code is None else code(encoded) * mask.unsqueeze(-1)
        return masked_mean_max(encoded, mask, nonnegative=True), codes
    representatives, inverse = found
    encoded = encoder(representatives)  # (U, D)
    valid = (
        torch.ones(len(representatives), dtype=encoded.dtype)
        if valid_column is None
        else (representatives[:, valid_column] > 0).to(encoded.dtype)
    )
    # the distinct (state, row) pairs, each with its count of valid rows
    distinct = len(representatives)
    pair_keys = torch.arange(batch).repeat_interleave(slots) * distinct + inverse
    pairs, counts = torch.unique(pair_keys, return_counts=True)
    state, row = pairs // distinct, pairs % distinct
    weight = (counts.to(encoded.dtype) * valid.index_select(0, row)).unsqueeze(-1)  # (P, 1)
    # index_select, not encoded[row]: its backward is an index_add, where indexing's is
    # an accumulating index_put, several times slower on the CPU
    pair_rows = encoded.index_select(0, row)  # (P, D)
    zeros = encoded.new_zeros((batch, encoded.shape[1]))
    total = encoded.new_zeros((batch, 1)).index_add(0, state, weight)
    sums = zeros.index_add(0, state, pair_rows * weight)
    mean = sums / total.clamp(min=1.0)
    # rows are >= 0, so a max that starts at 0 is the max over valid rows (0 if none)
    maximum = zeros.scatter_reduce(
        0,
        state.unsqueeze(-1).expand_as(pair_rows),
        pair_rows * (weight > 0).to(encoded.dtype),
        reduce="amax",
        include_self=True,
    )
    codes = None
    if code is not None:
        row_codes = code(encoded) * valid.unsqueeze(-1)  # (U, S)
        codes = row_codes.index_select(0, inverse).reshape(batch, slots, -1)
    return torch.cat([mean, maximum], dim=-1), codes


def _row_encoder(in_dim: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())


class PermutationExtractor(BaseFeaturesExtractor):
    """Shared per-row encoders with masked mean + max pooling (Deep Sets).

    Output: ``[pool(gpus), pool(pending), pool(running), frag_hist, global,
    pending slot codes, running slot codes]`` of size ``6 row_dim + 25 + slot_dim (W + R)``.
    With ``observation.cluster_summary`` an MLP of ``obs["cluster"]`` (``2 row_dim`` wide)
    stands in for ``pool(gpus)``.

    Args:
        observation_space: ``GPUShare-v0``'s ``Dict`` space.
        row_dim: Width of each row encoder (hidden and output).
        slot_dim: Per-slot code length appended for the pending and running windows
            (0: a fully permutation-invariant output).
        running_columns: Columns of a running row (``running_features`` of the env's
            observation options; default: the standard ones).
        pending_columns: Columns of a pending row (``pending_features`` of the env's
            observation options; default: the standard ones).
        proposal: Append ``obs["proposal"]`` (a base heuristic's action as a one-hot over
            the env's actions, ``agents.residual``) to the output, after the slot codes,
            for a policy that adds it to its logits (``SlotHead``'s ``accept_bias``).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        row_dim: int = 64,
        slot_dim: int = 4,
        running_columns: int = len(RUNNING_FEATURES),
        pending_columns: int = len(PENDING_FEATURES),
        proposal: bool = False,
    ):
        sizes = {key: int(np.prod(space.shape or (0,))) for key, space in observation_space.items()}
        # observation.cluster_summary: obs["cluster"] (fixed width) in place of the GPU rows
        self.summarised = "cluster" in sizes
        self.num_gpus = 0 if self.summarised else sizes["gpus"] // len(GPU_FEATURES)
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
        if proposal and "proposal" not in sizes:
            raise ValueError(
                "PermutationExtractor: proposal=True needs obs['proposal'] (agents.residual)"
            )
        #: Entries of the proposal appended to the output (0: none).
        self.proposal_dim = sizes["proposal"] if proposal else 0
        features_dim = 6 * row_dim + extra + slot_dim * slots + self.proposal_dim
        super().__init__(observation_space, features_dim=features_dim)
        self.slot_dim = slot_dim
        if self.summarised:  # as wide as the GPU rows' [mean, max] pool
            self.cluster_encoder = nn.Sequential(
                nn.Linear(sizes["cluster"], 2 * row_dim), nn.ReLU()
            )
        else:
            self.gpu_encoder = _row_encoder(len(GPU_FEATURES), row_dim)
        self.pending_encoder = _row_encoder(pending_columns, row_dim)
        self.running_encoder = _row_encoder(running_columns, row_dim)
        if slot_dim > 0:
            self.pending_code = nn.Linear(row_dim, slot_dim)
            self.running_code = nn.Linear(row_dim, slot_dim)

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encode a batch of observations.  # (B, features_dim)"""
        batch = observations["pending"].shape[0]
        pending = observations["pending"].reshape(batch, self.pending_window, self.pending_columns)
        running = observations["running"].reshape(batch, self.running_window, self.running_columns)
        pending_code = self.pending_code if self.slot_dim > 0 else None
        running_code = self.running_code if self.slot_dim > 0 else None
        if self.summarised:
            gpu_pool = self.cluster_encoder(observations["cluster"])
        else:
            gpus = observations["gpus"].reshape(batch, self.num_gpus, len(GPU_FEATURES))
            gpu_pool, _ = pool_table(self.gpu_encoder, gpus, _GPU_VALID)
        pending_pool, pending_codes = pool_table(
            self.pending_encoder, pending, _VALID, pending_code
        )
        running_pool, running_codes = pool_table(
            self.running_encoder, running, _VALID, running_code
        )
        parts = [
            gpu_pool,
            pending_pool,
            running_pool,
            observations["frag_hist"],
            observations["global"],
        ]
        if pending_codes is not None and running_codes is not None:
            parts += [pending_codes.flatten(1), running_codes.flatten(1)]
        if self.proposal_dim:
            parts.append(observations["proposal"])
        return torch.cat(parts, dim=-1)
