"""The policy once named ``fgd``, now ``min_frag`` (``baselines.min_frag``).

Kept for one release: ``FGD`` is ``MinFrag``, and ``baselines.make("fgd")`` builds it with
a ``FutureWarning``.
"""

from __future__ import annotations

from baselines.min_frag import MinFrag

__all__ = ["FGD"]

#: The old name of :class:`~baselines.min_frag.MinFrag`.
FGD = MinFrag
