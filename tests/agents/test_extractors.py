"""The permutation-aware extractor: invariant to the order and padding of table rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.extractors import PermutationExtractor, masked_mean_max
from gpushare_env.envs.observation import PENDING_FEATURES, RUNNING_FEATURES, observation_space

_G, _W, _R = 8, 6, 5
_P, _Q = len(PENDING_FEATURES), len(RUNNING_FEATURES)


def _batch(valid_pending: int = 4, valid_running: int = 3) -> dict[str, torch.Tensor]:
    """A random observation batch with the first slots valid and the rest zero-padded."""
    rng = np.random.default_rng(0)
    space = observation_space(_G, _W, _R)
    obs = {k: rng.random((2, v.shape[0])).astype(np.float32) for k, v in space.spaces.items()}
    pending = obs["pending"].reshape(2, _W, _P)
    pending[:, :valid_pending, 0] = 1.0
    pending[:, valid_pending:] = 0.0
    running = obs["running"].reshape(2, _R, _Q)
    running[:, :valid_running, 0] = 1.0
    running[:, valid_running:] = 0.0
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def _extractor(slot_dim: int) -> PermutationExtractor:
    torch.manual_seed(0)
    return PermutationExtractor(observation_space(_G, _W, _R), row_dim=16, slot_dim=slot_dim)


def _permute_pending(obs: dict[str, torch.Tensor], order: list[int]) -> dict[str, torch.Tensor]:
    out = dict(obs)
    rows = obs["pending"].reshape(2, _W, _P)[:, order]
    out["pending"] = rows.reshape(2, _W * _P)
    return out


def test_output_invariant_to_permuting_valid_pending_slots() -> None:
    extractor = _extractor(slot_dim=0)
    obs = _batch()
    permuted = _permute_pending(obs, [2, 0, 3, 1, 4, 5])
    assert not torch.equal(obs["pending"], permuted["pending"])
    torch.testing.assert_close(extractor(obs), extractor(permuted))
    assert extractor(obs).shape == (2, extractor.features_dim)


def test_output_depends_on_valid_rows() -> None:
    """The invariance is not vacuous: changing a valid row changes the output."""
    extractor = _extractor(slot_dim=0)
    obs = _batch()
    changed = dict(obs)
    pending = obs["pending"].clone().reshape(2, _W, _P)
    pending[:, 1, 2] += 0.5
    changed["pending"] = pending.reshape(2, -1)
    assert not torch.allclose(extractor(obs), extractor(changed))


def test_padding_rows_are_ignored() -> None:
    """Rows with valid = 0 do not reach the output, whatever they hold (padding is masked)."""
    extractor = _extractor(slot_dim=4)
    obs = _batch(valid_pending=2, valid_running=1)
    noisy = dict(obs)
    pending = obs["pending"].clone().reshape(2, _W, _P)
    pending[:, 2:, 1:] = 0.7  # garbage in padded slots, valid flag still 0
    noisy["pending"] = pending.reshape(2, -1)
    running = obs["running"].clone().reshape(2, _R, _Q)
    running[:, 1:, 1:] = 0.3
    noisy["running"] = running.reshape(2, -1)
    torch.testing.assert_close(extractor(obs), extractor(noisy))


def test_slot_codes_are_permutation_equivariant() -> None:
    """With per-slot codes the pooled part is invariant and the codes move with their rows."""
    extractor = _extractor(slot_dim=4)
    obs = _batch()
    order = [1, 3, 0, 2, 4, 5]
    base, perm = extractor(obs), extractor(_permute_pending(obs, order))
    pooled = 6 * 16 + 10 + 15
    torch.testing.assert_close(base[:, :pooled], perm[:, :pooled])
    codes = base[:, pooled : pooled + _W * 4].reshape(2, _W, 4)
    perm_codes = perm[:, pooled : pooled + _W * 4].reshape(2, _W, 4)
    torch.testing.assert_close(codes[:, order], perm_codes)
    assert torch.count_nonzero(codes[:, 4:]) == 0  # empty slots carry no code


def test_masked_mean_max_of_empty_table_is_zero() -> None:
    rows = torch.randn(3, 5, 7)
    mask = torch.zeros(3, 5)
    mask[0, :2] = 1.0
    pooled = masked_mean_max(rows, mask)
    assert torch.count_nonzero(pooled[1:]) == 0
    torch.testing.assert_close(pooled[0, :7], rows[0, :2].mean(0))
    torch.testing.assert_close(pooled[0, 7:], rows[0, :2].max(0).values)


@pytest.mark.parametrize("slot_dim", [0, 4])
def test_features_dim_matches_output(slot_dim: int) -> None:
    extractor = _extractor(slot_dim)
    assert extractor(_batch()).shape[1] == extractor.features_dim


def test_extractor_reads_the_held_time_column() -> None:
    space = observation_space(_G, _W, _R, held_time=True)
    with pytest.raises(ValueError, match="running_columns"):
        PermutationExtractor(space, row_dim=16)  # 5 x 18 entries are not rows of 17
    torch.manual_seed(0)
    extractor = PermutationExtractor(space, row_dim=16, running_columns=_Q + 1)
    rng = np.random.default_rng(0)
    obs = {
        k: torch.as_tensor(rng.random((2, v.shape[0]), dtype=np.float32))
        for k, v in space.spaces.items()
    }
    out = extractor(obs)
    assert out.shape == (2, extractor.features_dim)
    # the last column of a running row reaches the features
    changed = dict(obs)
    running = obs["running"].clone().reshape(2, _R, _Q + 1)
    running[:, :, -1] += 0.5
    changed["running"] = running.reshape(2, -1)
    assert not torch.allclose(extractor(changed), out)


def _repeating_batch(batch: int) -> dict[str, torch.Tensor]:
    """``batch`` observations whose rows repeat (a few distinct GPU, pending and running
    rows, some padding): enough rows that ``pool_table`` takes its distinct-row path."""
    rng = np.random.default_rng(1)
    space = observation_space(_G, _W, _R)
    obs = {}
    for key, box in space.spaces.items():
        width = {"gpus": 6, "pending": _P, "running": _Q}.get(key)
        if width is None:
            obs[key] = rng.random((batch, box.shape[0])).astype(np.float32)
            continue
        palette = rng.random((5, width)).astype(np.float32)
        palette[:, 0] = 1.0  # valid rows (the GPU table has no valid column; harmless)
        palette[0] = 0.0  # padding
        choice = rng.integers(0, 5, size=(batch, box.shape[0] // width))
        obs[key] = palette[choice].reshape(batch, -1)
    obs["pending"][-1] = 0.0  # a state with no valid pending row pools to zeros
    return {k: torch.as_tensor(v) for k, v in obs.items()}


def _features_and_grads(
    extractor: PermutationExtractor, obs: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    extractor.zero_grad()
    features = extractor(obs)
    weights = torch.linspace(-1.0, 1.0, features.shape[1])
    (features * weights).sum().backward()
    return features.detach(), [p.grad.clone() for p in extractor.parameters()]


def test_distinct_row_pooling_gives_the_dense_values_and_gradients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agents import extractors

    # in float64, so that the two ways of summing agree to rounding of that precision
    extractor = _extractor(slot_dim=4).double()
    obs = {k: v.double() for k, v in _repeating_batch(batch=600).items()}  # 4,800 GPU rows
    assert extractors.distinct_rows(obs["gpus"].reshape(-1, 6)) is not None
    fast, fast_grads = _features_and_grads(extractor, obs)
    monkeypatch.setattr(extractors, "DEDUP_MIN_ROWS", 10**9)  # every table dense
    assert extractors.distinct_rows(obs["gpus"].reshape(-1, 6)) is None
    dense, dense_grads = _features_and_grads(extractor, obs)
    torch.testing.assert_close(fast, dense, rtol=1e-12, atol=1e-12)
    for a, b in zip(fast_grads, dense_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-9)
    assert torch.all(fast[-1, 2 * 16 : 4 * 16] == 0)  # the pooled empty pending table


def test_distinct_rows_are_exact_and_a_key_collision_falls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agents import extractors

    rows = torch.tensor([[0.25, 0.5], [0.5, 0.25], [0.25, 0.5]]).repeat(1000, 1)
    representatives, inverse = extractors.distinct_rows(rows)  # type: ignore[misc]
    assert len(representatives) == 2
    assert torch.equal(representatives[inverse], rows)
    # weights under which the two different rows share a key: detected, no answer
    monkeypatch.setattr(extractors, "_KEY_WEIGHTS", torch.ones(8, dtype=torch.float64))
    assert extractors.distinct_rows(rows) is None
