"""The commit's acceptance rule (``recon.store.commit_accepted``), which both the commit
transaction and ``recon prune``'s cutoff use, on hand-built cases."""

from __future__ import annotations

import pytest

from recon.store import commit_accepted, moves_state

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("current", "base", "committed", "moves", "accepted"),
    [
        pytest.param(None, None, False, True, True, id="first_run_of_a_pipeline"),
        pytest.param("r1", "r1", False, True, True, id="next_run_from_the_current_state"),
        pytest.param("r2", "r1", False, True, True, id="rerun_of_the_run_that_made_the_state"),
        pytest.param("r3", "r1", False, False, False, id="another_run_committed_meanwhile"),
        pytest.param("r3", "r1", True, False, True, id="cleared_old_run_replaces_its_results"),
        pytest.param(None, "r1", False, False, False, id="pipeline_reset_since_the_snapshot"),
    ],
)
def test_a_commit_moves_the_state_only_from_its_base_and_old_runs_only_replace_results(
    current: str | None, base: str | None, committed: bool, moves: bool, accepted: bool
) -> None:
    run = "r2"
    assert moves_state(current, base, run) is moves
    assert commit_accepted(current, base, run, committed) is accepted
