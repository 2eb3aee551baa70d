"""Actor-critic policies whose action logits are computed per slot (``--extractor pointer``).

``GPUShare-v0`` addresses its actions by slot: ``4 * i + s`` places the ``i``-th waiting
job with strategy ``s``, ``4 W + j`` suspends the ``j``-th running job, ``4 W + R``
advances. SB3's default head maps one feature vector to all ``4 W + R + 1`` logits with a
linear layer, so it must learn "place job ``i``" anew for every slot ``i``. The head here
scores every slot with the *same* small network, applied to that slot's own encoding and
a summary of the whole state (as pointer networks and Decima's per-node scores do:
Vinyals et al., NeurIPS 2015; Mao et al., SIGCOMM 2019):

- ``logits[4 i : 4 i + 4] = pending_head([code_i, context])``,
- ``logits[4 W + j] = running_head([code_j, context])``,
- ``logits[4 W + R] = advance_head(context)``,

with ``context = MLP(pooled tables, fragment histogram, global features)``. A rule such
as "start the job with the least predicted work" is then one function of a row, and the
softmax over the slots compares them. The logits are equivariant to a permutation of the
rows; the value head is the usual MLP over the whole feature vector, or over the pooled
context alone (``critic="context"``).

Portability: no weight of the actor depends on the number of GPUs or on the windows (the
tables are pooled by shared row encoders, the slots scored by shared heads), and with
``critic="context"`` no weight of the critic does either; :mod:`agents.portable` plays
such a model on any cluster and with any windows.

The features come from :class:`agents.extractors.PermutationExtractor` with per-slot codes
(``slot_dim`` > 0), whose output is ``[context, pending codes, running codes]``.

Deterministic actions (``kind_mode``): the most likely single action is a poor summary of
a policy whose probability is spread over many equivalent placements; a policy that
schedules 80% of the time, over 20 slot-strategy pairs, has ``advance`` as its argmax at
15%. With ``kind_mode`` the deterministic action is the most likely *kind* (schedule,
suspend or advance, by summed probability), then the most likely action of that kind.
Models built by ``gpushare-train`` use it; a model saved without it acts by the plain
argmax.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.policies import MultiInputActorCriticPolicy
from torch import nn

from agents.extractors import PermutationExtractor
from gpushare_env.sim import STRATEGIES

__all__ = [
    "CRITIC_INPUTS",
    "STRATEGIES_PER_SLOT",
    "MaskableSlotPolicy",
    "SlotHead",
    "SlotPolicy",
    "kind_mode",
]

#: Placement strategies per pending slot in ``GPUShare-v0``'s action space.
STRATEGIES_PER_SLOT = len(STRATEGIES)

#: What the value MLP reads: the whole feature vector (pooled context and every slot's
#: code; its first layer is sized by the windows) or the pooled context alone.
CRITIC_INPUTS: tuple[str, ...] = ("features", "context")


def kind_mode(probs: torch.Tensor, pending_window: int, running_window: int) -> torch.Tensor:
    """Deterministic actions of ``GPUShare-v0`` policies: per row, the kind (schedule,
    suspend, advance) of largest summed probability, then its most likely action.

    Args:
        probs: Action probabilities (masked actions at 0).  # (B, 4 W + R + 1)
        pending_window: ``W``.
        running_window: ``R``.

    Returns:
        Action indices.  # (B,)
    """
    schedule = STRATEGIES_PER_SLOT * pending_window
    bounds = [0, schedule, schedule + running_window, probs.shape[1]]
    kinds = [(bounds[i], bounds[i + 1]) for i in range(3)]
    totals = torch.stack([probs[:, lo:hi].sum(dim=1) for lo, hi in kinds], dim=1)
    chosen = totals.argmax(dim=1)
    actions = torch.empty_like(chosen)
    for i, (lo, hi) in enumerate(kinds):
        rows = chosen == i
        if rows.any():
            actions[rows] = lo + probs[rows, lo:hi].argmax(dim=1)
    return actions


def _mlp(in_dim: int, hidden: int, out_dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))


class SlotHead(nn.Module):
    """SB3 ``mlp_extractor`` whose actor output *is* the action logits.

    Args:
        extractor: The policy's features extractor (gives the layout of its output).
        hidden: Width of the context and slot networks.
        value_arch: Hidden layers of the value MLP.
        activation: Activation of the value MLP (the policy's ``activation_fn``).
        critic: What the value MLP reads (``CRITIC_INPUTS``): ``"features"``, the whole
            feature vector, or ``"context"``, the pooled part alone (then no weight
            depends on the cluster's size or the windows).
        accept_bias: With an extractor that appends a base heuristic's proposal
            (``proposal_dim`` > 0, ``agents.residual``): the logits are
            ``head logits + accept_bias x proposal``, a fixed prior towards the proposed
            action that the learned logits must outweigh to override it. Without one it
            must be 0.
    """

    def __init__(
        self,
        extractor: PermutationExtractor,
        hidden: int,
        value_arch: list[int],
        activation: type[nn.Module] = nn.Tanh,
        critic: str = "features",
        accept_bias: float = 0.0,
    ):
        super().__init__()
        if not isinstance(extractor, PermutationExtractor) or extractor.slot_dim <= 0:
            raise ValueError("SlotHead needs a PermutationExtractor with slot_dim > 0")
        if critic not in CRITIC_INPUTS:
            raise ValueError(f"critic must be one of {list(CRITIC_INPUTS)}, got {critic!r}")
        self.critic = critic
        self.code_dim = extractor.slot_dim
        self.pending_window = extractor.pending_window
        self.running_window = extractor.running_window
        self.proposal_dim = int(getattr(extractor, "proposal_dim", 0))
        if accept_bias and not self.proposal_dim:
            raise ValueError("SlotHead: accept_bias needs an extractor with proposal=True")
        self.accept_bias = float(accept_bias)
        codes = self.code_dim * (self.pending_window + self.running_window)
        self.context_dim = extractor.features_dim - codes - self.proposal_dim
        self.context_net = nn.Sequential(nn.Linear(self.context_dim, hidden), nn.ReLU())
        self.pending_head = _mlp(self.code_dim + hidden, hidden, STRATEGIES_PER_SLOT)
        self.running_head = _mlp(self.code_dim + hidden, hidden, 1)
        self.advance_head = nn.Linear(hidden, 1)
        layers: list[nn.Module] = []
        width = extractor.features_dim if critic == "features" else self.context_dim
        for size in value_arch:
            layers += [nn.Linear(width, size), activation()]
            width = size
        self.value_net = nn.Sequential(*layers)
        self.latent_dim_pi = STRATEGIES_PER_SLOT * self.pending_window + self.running_window + 1
        if self.proposal_dim not in (0, self.latent_dim_pi):
            raise ValueError(
                f"SlotHead: the proposal has {self.proposal_dim} entries, not one per action "
                f"({self.latent_dim_pi})"
            )
        self.latent_dim_vf = width

    def output_layers(self) -> list[nn.Module]:
        """The layers that produce logits (initialised small, like SB3's ``action_net``)."""
        return [self.pending_head[-1], self.running_head[-1], self.advance_head]

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        """Action logits.  # (B, 4 W + R + 1)"""
        batch = features.shape[0]
        # one split (its backward is one concatenation, not a zero-filled copy per slice)
        sizes = [
            self.context_dim,
            self.code_dim * self.pending_window,
            self.code_dim * self.running_window,
            self.proposal_dim,
        ]
        state, pending, running, proposal = features.split(sizes, dim=1)
        context = self.context_net(state)  # (B, H)
        pending = pending.reshape(batch, self.pending_window, -1)
        running = running.reshape(batch, self.running_window, -1)

        def scored(codes: torch.Tensor, head: nn.Sequential) -> torch.Tensor:
            # head(cat([code_i, context])) with its first layer split in two: the context's
            # part is computed once per state, not once per slot
            first, rest = head[0], head[1:]
            assert isinstance(first, nn.Linear)
            weight = first.weight
            slot_part = codes @ weight[:, : self.code_dim].T  # (B, N, H)
            state_part = context @ weight[:, self.code_dim :].T + first.bias  # (B, H)
            return rest(slot_part + state_part.unsqueeze(1))

        logits = torch.cat(
            [
                scored(pending, self.pending_head).flatten(1),  # index 4 i + s
                scored(running, self.running_head).flatten(1),
                self.advance_head(context),
            ],
            dim=-1,
        )
        if self.accept_bias:  # the base heuristic's proposal as a prior (agents.residual)
            logits = logits + self.accept_bias * proposal
        return logits

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        """The value MLP's last hidden layer.  # (B, latent_dim_vf)"""
        if self.critic == "context":
            features = features[:, : self.context_dim]
        return self.value_net(features)

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


class _SlotHeadMixin:
    """Puts a :class:`SlotHead` in place of SB3's ``mlp_extractor`` + linear ``action_net``."""

    mlp_extractor: Any
    action_net: Any
    masked: ClassVar[bool] = False  # get_distribution takes the action masks

    def __init__(
        self,
        *args: Any,
        head_dim: int = 64,
        kind_mode: bool = False,
        suspend_bias: float = 0.0,
        critic: str = "features",
        accept_bias: float = 0.0,
        residual_base: str | None = None,
        **kwargs: Any,
    ):
        self.head_dim = head_dim
        self.kind_mode = kind_mode
        self.suspend_bias = float(suspend_bias)
        self.critic = critic
        self.accept_bias = float(accept_bias)
        # the heuristic whose proposals the policy reads (agents.residual), kept with it
        self.residual_base = residual_base
        super().__init__(*args, **kwargs)

    def _predict(
        self, observation: Any, deterministic: bool = False, action_masks: Any = None
    ) -> torch.Tensor:
        """Actions; deterministic ones by :func:`kind_mode` when ``kind_mode`` is set,
        except for a residual policy (``accept_bias`` > 0): its deterministic action is
        the most likely one, the proposal unless a learned logit outweighs the prior (by
        kind, a queue of hundreds of startable jobs could outweigh a proposed
        ``advance`` or ``suspend`` by their number alone)."""
        args = (observation, action_masks) if self.masked else (observation,)
        distribution = self.get_distribution(*args)  # type: ignore[attr-defined]
        if not (deterministic and self.kind_mode) or self.accept_bias:
            return distribution.get_actions(deterministic=deterministic)
        head: SlotHead = self.mlp_extractor
        return kind_mode(distribution.distribution.probs, head.pending_window, head.running_window)

    def _build_mlp_extractor(self) -> None:
        net_arch = self.net_arch  # type: ignore[attr-defined]
        value_arch = net_arch.get("vf", []) if isinstance(net_arch, dict) else list(net_arch)
        self.mlp_extractor = SlotHead(
            self.features_extractor,  # type: ignore[attr-defined]
            self.head_dim,
            list(value_arch),
            self.activation_fn,  # type: ignore[attr-defined]
            self.critic,
            self.accept_bias,
        )

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)  # type: ignore[misc]
        # The head already outputs logits: no linear layer after it.
        self.action_net = nn.Identity()
        if self.ortho_init:  # type: ignore[attr-defined]
            for layer in self.mlp_extractor.output_layers():
                self.init_weights(layer, gain=0.01)  # type: ignore[attr-defined]
        if self.suspend_bias:  # a prior on suspending, at initialisation only
            nn.init.constant_(self.mlp_extractor.running_head[-1].bias, self.suspend_bias)
        self.optimizer = self.optimizer_class(  # type: ignore[attr-defined]
            self.parameters(),  # type: ignore[attr-defined]
            lr=lr_schedule(1),
            **self.optimizer_kwargs,  # type: ignore[attr-defined]
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()  # type: ignore[misc]
        data["head_dim"] = self.head_dim
        data["kind_mode"] = self.kind_mode
        if self.suspend_bias:  # only then: a model without a bias saves no such kwarg
            data["suspend_bias"] = self.suspend_bias
        if self.critic != "features":  # likewise
            data["critic"] = self.critic
        if self.accept_bias or self.residual_base is not None:  # a residual policy
            data["accept_bias"] = self.accept_bias
            data["residual_base"] = self.residual_base
        return data


class MaskableSlotPolicy(_SlotHeadMixin, MaskableMultiInputActorCriticPolicy):
    """``MaskablePPO``'s ``MultiInputPolicy`` with per-slot action logits."""

    masked = True


class SlotPolicy(_SlotHeadMixin, MultiInputActorCriticPolicy):
    """``PPO``'s ``MultiInputPolicy`` with per-slot action logits."""
