"""docs/env.md's fork snippet, run as written: every valid action tried on forks."""

from __future__ import annotations

import re
from pathlib import Path

ENV_DOC = Path(__file__).resolve().parents[2] / "docs" / "env.md"


def fork_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", ENV_DOC.read_text(), flags=re.S)
    (snippet,) = [block for block in blocks if "def mean_jct_after" in block]
    return snippet


def test_the_fork_snippet_tries_every_valid_action(capsys) -> None:
    namespace: dict = {}
    exec(compile(fork_snippet(), str(ENV_DOC), "exec"), namespace)
    out = capsys.readouterr().out
    assert "actions; thesis's:" in out and "best:" in out
    env, outcome = namespace["env"], namespace["outcome"]
    # the forks left the original where it was: the same instant, the same mask
    assert len(outcome) == int(env.unwrapped.action_masks().sum())
    # trying them changed nothing: the same what-if again gives the same outcome
    chosen = namespace["chosen"]
    assert namespace["mean_jct_after"](chosen) == outcome[chosen]
    assert len(set(outcome.values())) > 1  # and the actions lead to different outcomes
