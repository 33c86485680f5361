"""Flows (issue 73, item 2): pipelines that form one chain, topic A -> topic B -> table, declared
as hops of a named flow (``flow: <name>`` on each hop).

The hops' order is the chain itself: a hop whose sink is a Kafka topic (``sink.kind: kafka``)
feeds the hop whose ``kafka`` reads that topic through the same connection. A flow must be one
chain: one first hop (its topic is no hop's sink), each hop feeding at most one other, every hop
reached. Checked when the file loads (:func:`flow_problems`), each problem named by pipeline and
key; :func:`flows_of` gives each flow's hops in order.

What a flow is for: per hop its verdict counts, and for a message the hop where it went wrong
(:func:`first_bad_hop`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recon.config.model import PipelineConfig


@dataclass(frozen=True)
class Flow:
    """A named chain of pipelines, first hop first."""

    name: str
    hops: tuple[str, ...]


def _feeds(cfg: PipelineConfig) -> tuple[str, str] | None:
    """``(connection, topic)`` a hop writes, when its sink is a topic."""
    if cfg.sink.is_kafka and cfg.sink.topic is not None:
        return cfg.sink.connection, cfg.sink.topic
    return None


def _reads(cfg: PipelineConfig) -> tuple[str, str]:
    return cfg.kafka.connection, cfg.kafka.topic


def _members(pipelines: Mapping[str, PipelineConfig]) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    for name, cfg in pipelines.items():
        if cfg.flow is not None:
            members.setdefault(cfg.flow, []).append(name)
    return members


def _chain(
    pipelines: Mapping[str, PipelineConfig], names: Sequence[str]
) -> tuple[list[str], list[tuple[str, str]]]:
    """The hops in order, and the problems ``(pipeline, message)`` that keep them from one
    chain."""
    flow = pipelines[names[0]].flow
    problems: list[tuple[str, str]] = []
    if len(names) < 2:
        problems.append((names[0], "a flow has two hops or more: declare it on the next hop too"))
        return list(names), problems
    by_topic: dict[tuple[str, str], list[str]] = {}
    for n in names:
        by_topic.setdefault(_reads(pipelines[n]), []).append(n)
    fed = {n: by_topic.get(_feeds(pipelines[n]) or ("", ""), []) for n in names}
    for n, nexts in fed.items():
        if len(nexts) > 1:
            read_by = ", ".join(nexts)
            problems.append((n, f"its sink topic is read by {read_by}: a flow is one chain"))
    heads = [n for n in names if not any(n in nexts for nexts in fed.values())]
    if len(heads) != 1:
        listed = ", ".join(heads) if heads else "none (a loop)"
        message = (
            f"flow {flow!r} needs one first hop (reading a topic no hop writes), it has: "
            f"{listed}; each other hop reads the sink.topic of the hop before it"
        )
        problems.append((names[0], message))
        return list(names), problems
    order = [heads[0]]
    while len(fed[order[-1]]) == 1 and fed[order[-1]][0] not in order:
        order.append(fed[order[-1]][0])
    for n in names:
        if n not in order:
            message = (
                f"not chained in flow {flow!r}: its kafka topic and connection are no other "
                "hop's sink.topic and sink.connection"
            )
            problems.append((n, message))
    return order, problems


def flow_problems(pipelines: Mapping[str, PipelineConfig]) -> list[tuple[str, str, str]]:
    """Every problem of the declared flows, as ``(pipeline, key, message)``."""
    return [
        (pipeline, "flow", message)
        for names in _members(pipelines).values()
        for pipeline, message in _chain(pipelines, names)[1]
    ]


def flows_of(pipelines: Mapping[str, PipelineConfig]) -> dict[str, Flow]:
    """Each declared flow with its hops in order (the pipelines as loaded: their flows checked)."""
    return {
        flow: Flow(flow, tuple(_chain(pipelines, names)[0]))
        for flow, names in _members(pipelines).items()
    }


def first_bad_hop(flow: Flow, verdicts: Mapping[str, str | None]) -> str | None:
    """The hop where a message went wrong: the first whose verdict is not ``delivered`` (nor
    ``late``: it got there), following the chain; None when every hop delivered it.

    :param verdicts: the message's verdict per hop (pipeline) that judged it; a hop that has
        not judged it yet (None or absent) ends the search there, nothing wrong so far.
    """
    for hop in flow.hops:
        verdict = verdicts.get(hop)
        if verdict is None:
            return None
        if verdict not in ("delivered", "late"):
            return hop
    return None
