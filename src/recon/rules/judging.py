"""What a pipeline declares that the verdict steps read: the latency bound and the payload
comparison, as the parameters the rule files name.

``${LATE_AFTER_MS}`` is the bound (NULL: none). ``${PAYLOAD_DIFF}`` is an expression over the
columns ``record_payload`` and ``sink_payload`` (``records.payload`` and ``sink_rows.payload``,
where ``02_joined`` pairs them)
giving the names of the compared fields whose values differ, in declared order: an empty list
when none does, NULL when either side has no payload (nothing was compared). ``${COMPARED}`` is
the list of every compared field's name, in that order. Each field is compared by its kind
(``recon.read.sink_payload.KINDS``): equal text is equal; otherwise numbers are compared as
numbers, booleans as booleans, timestamps as instants, digests case-insensitively; a NULL
equals only a NULL. The expression is built from the declared fields because their number and
kinds are the pipeline's; its shape is the same for every field.
"""

from __future__ import annotations

from dataclasses import dataclass

from recon.config import PipelineConfig
from recon.rules.render import literal

#: Per kind, the cast that makes two texts of equal meaning compare equal (``{}``: the text).
_CANONICAL: dict[str, str] = {
    "number": "TRY_CAST({} AS DOUBLE)",
    "boolean": "TRY_CAST({} AS BOOLEAN)",
    "time": "TRY_CAST({} AS TIMESTAMPTZ)",
    "sha256": "lower({})",
}


@dataclass(frozen=True)
class Judging:
    """The declared checks a run's verdict steps apply.

    :param late_after_ms: a delivery slower than this many milliseconds is ``late`` (None: no
        bound; latencies are still measured when both times are known).
    :param compared: the compared fields' names, as a ``mismatched`` row's detail lists them.
    :param kinds: how each compared field is compared, in the same order.
    :param ordered: the sink is an upsert sink whose order is checked (``order`` declared).
    """

    late_after_ms: int | None = None
    compared: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    ordered: bool = False

    @classmethod
    def of(cls, cfg: PipelineConfig, kinds: tuple[str, ...] = ()) -> Judging:
        """The checks ``cfg`` declares.

        :param kinds: the payload columns' kinds, as the sink's catalog gives them
            (``recon.read.sink.SinkTable.payload_kinds``); required when it declares ``payload``.
        """
        compared = cfg.payload.compared if cfg.payload else ()
        if len(kinds) != len(compared):
            raise ValueError(f"pipeline '{cfg.name}': {len(compared)} payload fields, {kinds=}")
        bound = cfg.latency.max_ms if cfg.latency else None
        return cls(bound, compared, kinds, ordered=cfg.order is not None)

    def params(self) -> dict[str, str]:
        """The placeholders of the verdict steps, as SQL."""
        bound = self.late_after_ms
        return {
            "LATE_AFTER_MS": "CAST(NULL AS BIGINT)" if bound is None else str(int(bound)),
            "PAYLOAD_DIFF": self._payload_diff(),
            "COMPARED": (
                "[" + ", ".join(literal(c) for c in self.compared) + "]"
                if self.compared
                else "CAST([] AS VARCHAR[])"
            ),
        }

    def _payload_diff(self) -> str:
        if not self.compared:
            return "CAST(NULL AS VARCHAR[])"
        named = ", ".join(
            f"CASE WHEN {_differs(i, kind)} THEN {literal(name)} END"
            for i, (name, kind) in enumerate(zip(self.compared, self.kinds, strict=True), 1)
        )
        # Nearly every pair is equal text field by field: one comparison of the two lists
        # settles it, and only the others are compared field by field (an engine that does not
        # call lists with NULLs in the same places equal sends those the long way: same answer).
        return (
            "CASE WHEN record_payload IS NULL OR sink_payload IS NULL THEN CAST(NULL AS VARCHAR[]) "
            "WHEN record_payload = sink_payload THEN CAST([] AS VARCHAR[]) "
            f"ELSE list_filter([{named}], f -> f IS NOT NULL) END"
        )


def _differs(i: int, kind: str) -> str:
    """Whether field ``i`` (1-based) differs between ``record_payload`` and ``sink_payload``."""
    r, s = f"record_payload[{i}]", f"sink_payload[{i}]"
    same = "false"
    if kind in _CANONICAL:
        cast = _CANONICAL[kind]
        same = f"coalesce({cast.format(r)} = {cast.format(s)}, false)"
    return (
        f"(CASE WHEN {r} IS NULL OR {s} IS NULL THEN NOT ({r} IS NULL AND {s} IS NULL) "
        f"WHEN {r} = {s} THEN false ELSE NOT {same} END)"
    )
