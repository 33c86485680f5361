"""The line protocol between a supervisor and the consumer processes it may kill.

A child prints ``WINDOW`` when it reaches its crash window (after one side effect, before the
other) and waits for a line on stdin; the supervisor answers ``go`` or sends SIGKILL. ``HOLD``
is the same handshake at a hold point (a sink transaction kept open: rows inserted, not yet
committed); the supervisor answers ``go`` when whoever holds it lets go. ``BATCH n`` reports
progress, ``READY`` that a consumer is fetching (what is produced from now on is read at once;
no answer is awaited) and ``DONE n`` a clean end. Keeping the child blocked while the supervisor
decides makes the kill land exactly between the two steps, not somewhere near them.
"""

from __future__ import annotations

import sys

WINDOW = "WINDOW"
HOLD = "HOLD"
READY = "READY"
BATCH = "BATCH"
DONE = "DONE"
GO = "go"


def say(*words: object) -> None:
    """Send one protocol line to the supervisor."""
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def crash_window(enabled: bool) -> None:
    """Stop at the crash window until the supervisor lets the child go (or kills it).

    :param enabled: without a supervisor listening, there is no window.
    """
    if enabled:
        _wait_for_go(WINDOW)


def hold_point(enabled: bool) -> None:
    """Stop with the sink transaction open until the supervisor lets the child commit.

    :param enabled: without a supervisor listening, nothing is held.
    """
    if enabled:
        _wait_for_go(HOLD)


def _wait_for_go(word: str) -> None:
    say(word)
    answer = sys.stdin.readline()
    if answer.strip() != GO:
        # The supervisor is gone (EOF): a consumer without its supervisor must not go on.
        raise SystemExit(3)
