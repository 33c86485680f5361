"""What a pipeline declares that the verdict steps read: the latency bound and the payload
comparison, as the parameters the rule files name.

``${LATE_AFTER_MS}`` is the bound (NULL: none). ``${PAYLOAD_DIGESTS}`` is an expression over a
relation's ``payload`` (``records.payload``, ``sink_rows.payload``: the compared fields as text)
giving one 64-bit digest per field of its canonical value, as a struct of fields ``d1``, ``d2``,
... (a list cost DuckDB 1.8 s more at 10M: bench/engine_changes.md), which ``01_checked_*``
carry to the join instead of the text. ``${PAYLOAD_DIFF}`` is an expression over the columns
``record_digests`` and ``sink_digests`` (the two sides' digests, where ``02_joined`` pairs them)
giving the names of the compared fields whose digests differ, in declared order: an empty list
when none does, NULL when either side has no payload (nothing was compared). ``${COMPARED}`` is
the list of every compared field's name, in that order. Each field is compared by its kind
(``recon.read.sink_payload.KINDS``): equal text is equal; otherwise numbers are compared as
numbers, booleans as booleans, timestamps as instants, digests case-insensitively; a NULL
equals only a NULL. A field's digest is the hash of its canonical value by kind (of its text
when the text has none: ``seven`` as a number), NULL for a NULL, so two fields of equal meaning
have equal digests. Two that differ share a digest with a chance of 2^-64 per pair (the same
64-bit hash as the messageId's, ``hash``): a mismatch that rare would be missed. The join
carries 8 bytes per field instead of the text (the P6 bench's 48-character field: the shuffle
of every record and sink row). The expressions are built from the declared fields because
their number and kinds are the pipeline's; their shape is the same for every field.
"""

from __future__ import annotations

from dataclasses import dataclass

from recon.config import PipelineConfig
from recon.config.diversions import Predicate
from recon.rules.expect import expected_sql
from recon.rules.render import literal

#: Per kind, the cast that makes two texts of equal meaning compare equal (``{}``: the text;
#: NULL: the text has no value of that kind). Numbers have their own digest
#: (:func:`_number_digest`).
_CANONICAL: dict[str, str] = {
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
    :param expect: which records the sink is expected to hold (``expect``; None: every one).
    :param diverted: the pipeline declares dead-letter or retry topics (``diverted``): the run
        has input ``dead_letters``.
    """

    late_after_ms: int | None = None
    compared: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    ordered: bool = False
    expect: Predicate | None = None
    diverted: bool = False

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
        return cls(
            bound, compared, kinds, ordered=cfg.order is not None, expect=cfg.expect,
            diverted=cfg.diverted is not None,
        )  # fmt: skip

    def params(self) -> dict[str, str]:
        """The placeholders of the verdict steps, as SQL."""
        bound = self.late_after_ms
        return {
            "LATE_AFTER_MS": "CAST(NULL AS BIGINT)" if bound is None else str(int(bound)),
            "PAYLOAD_DIGESTS": self._payload_digests(),
            "PAYLOAD_DIFF": self._payload_diff(),
            "EXPECTED": expected_sql(self.expect),
            "COMPARED": (
                "[" + ", ".join(literal(c) for c in self.compared) + "]"
                if self.compared
                else "CAST([] AS VARCHAR[])"
            ),
        }

    def _payload_digests(self) -> str:
        if not self.compared:
            return "CAST(NULL AS BIGINT)"
        digests = ", ".join(
            f"'{_field(i)}': {_digest(i, kind)}" for i, kind in enumerate(self.kinds, 1)
        )
        return f"CASE WHEN payload IS NULL THEN NULL ELSE {{{digests}}} END"

    def _payload_diff(self) -> str:
        if not self.compared:
            return "CAST(NULL AS VARCHAR[])"
        named = ", ".join(
            f"CASE WHEN {_differs(i)} THEN {literal(name)} END"
            for i, name in enumerate(self.compared, 1)
        )
        # Nearly every pair is equal field by field: one comparison of the two structs settles
        # it, and only the others are compared field by field (an engine that does not call
        # structs with NULLs in the same places equal sends those the long way: same answer).
        return (
            "CASE WHEN record_digests IS NULL OR sink_digests IS NULL THEN CAST(NULL AS VARCHAR[]) "
            "WHEN record_digests = sink_digests THEN CAST([] AS VARCHAR[]) "
            f"ELSE list_filter([{named}], f -> f IS NOT NULL) END"
        )


def _digest(i: int, kind: str) -> str:
    """The digest of field ``i`` (1-based) of ``payload``: the hash of its canonical value, or
    of its text when it has none (a hash of NULL is not NULL: Spark's is its seed)."""
    text = f"payload[{i}]"
    if kind == "number":
        return f"CASE WHEN {text} IS NULL THEN NULL {_number_digest(text)}ELSE hash({text}) END"
    value = _CANONICAL[kind].format(text) if kind in _CANONICAL else None
    typed = f"WHEN {value} IS NOT NULL THEN hash({value}) " if value else ""
    return f"CASE WHEN {text} IS NULL THEN NULL {typed}ELSE hash({text}) END"


def _number_digest(text: str) -> str:
    """The ``WHEN`` branches of a number's digest: the same for every text of one value, and
    exact (``12345678901234567890`` is not ``12345678901234567891``).

    A value of at most 15 significant digits and a small exponent is hashed as the double it
    reads as: a double holds it exactly, and both engines hash -0 as 0, as their ``=`` does
    (tests/unit/test_payload_rules.py). A short text without an exponent always is one, and goes
    straight there (nearly every number: no text function runs). Any other value is hashed as
    its canonical decimal text (:func:`_exact_number`). Which of the two a value takes depends
    on the value, never on how it is written, so ``10``, ``10.0`` and ``1e1`` share a digest.
    A text that is no decimal (``NaN``, ``Infinity``) is hashed as the double it casts to.
    """
    double = f"TRY_CAST({text} AS DOUBLE)"
    exact = _exact_number(text)
    # 15 significant digits and an exponent of at most two: a normal double, exact.
    fits = f"regexp_matches({exact}, '^-?[0-9]{{1,15}}(e-?[0-9]{{1,2}})?$')"
    return (
        f"WHEN length({text}) <= 15 AND NOT contains({text}, 'e') AND NOT contains({text}, 'E') "
        f"AND {double} IS NOT NULL THEN hash({double}) "
        f"WHEN {exact} IS NOT NULL THEN (CASE WHEN {fits} THEN hash(CAST({exact} AS DOUBLE)) "
        f"ELSE hash({exact}) END) "
        f"WHEN {double} IS NOT NULL THEN hash({double}) "
    )


def _exact_number(text: str) -> str:
    """A decimal ``text`` as its canonical form, computed on its digits (no double): the
    significant digits without leading or trailing zeros, ``e`` and the exponent that makes them
    the value, a ``-`` before them when negative (``12.50`` and ``1.25E+1``: ``125e-1``); zero of
    either sign is ``0``. NULL when ``text`` is no decimal, or its exponent has more than 15
    digits. The rules' regular expressions are anchored, so DuckDB's and Spark's agree."""
    decimal = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]{1,15})?$"
    valid = f"regexp_matches({text}, '{decimal}')"
    whole = f"regexp_extract({text}, '^[+-]?([0-9]*)', 1)"
    digits = f"({whole} || regexp_extract({text}, '[.]([0-9]*)', 1))"
    # The digits up to the last that is not zero; without those zeros, the significant ones.
    kept = f"regexp_extract({digits}, '^([0-9]*[1-9])', 1)"
    significant = f"regexp_replace({kept}, '^0+', '')"
    written = f"regexp_extract({text}, '[eE]([+-]?[0-9]+)$', 1)"
    exponent = (
        f"(CASE WHEN {written} = '' THEN 0 ELSE CAST({written} AS BIGINT) END "
        f"+ length({whole}) - length({kept}))"
    )
    sign = f"(CASE WHEN starts_with({text}, '-') THEN '-' ELSE '' END)"
    return (
        f"(CASE WHEN NOT {valid} THEN NULL WHEN {kept} = '' THEN '0' "
        f"ELSE {sign} || {significant} || 'e' || CAST({exponent} AS VARCHAR) END)"
    )


def _field(i: int) -> str:
    """The name of field ``i``'s (1-based) digest in the struct ``${PAYLOAD_DIGESTS}`` makes."""
    return f"d{i}"


def _differs(i: int) -> str:
    """Whether field ``i`` (1-based) differs between ``record_digests`` and ``sink_digests``."""
    r, s = f"record_digests.{_field(i)}", f"sink_digests.{_field(i)}"
    return (
        f"(CASE WHEN {r} IS NULL OR {s} IS NULL THEN NOT ({r} IS NULL AND {s} IS NULL) "
        f"ELSE {r} <> {s} END)"
    )
