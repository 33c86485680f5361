"""Errors the workload raises on purpose."""

from __future__ import annotations


class WorkloadError(Exception):
    """A scenario could not run as asked: bad parameters, or a step of the run failed."""
