"""The Great Expectations suite files express the contract table, without Spark: each rule and
placeholder of each semantic's suite, the parameters a pipeline gives them, GX's ``mostly``
against the contract's exact rule, and stale or unknown suites refused.

The suites are generated from the contract table both sides read: the committed files must be the
generated ones, and editing one cell of the table changes both decisions alike (GX run on pandas).
The validations on Spark and pandas are tested in ``tests/unit/test_suites.py``.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from fixtures.suite_runs import _cfg, _gx_failures, _rows, _validate, _violations

from recon.config import Tolerances
from recon.contract.evaluate import evaluate_contract
from recon.model.verdicts import RATIO_BASE, ROW_VERDICTS, SEMANTICS, Verdict

pytestmark = pytest.mark.unit


def _placeholders(value: Any) -> set[str]:
    if isinstance(value, dict):
        if "$PARAMETER" in value:
            return {value["$PARAMETER"]}
        return set().union(*(_placeholders(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_placeholders(v) for v in value))
    return set()


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_suite_files_express_the_contract_table(semantics: str) -> None:
    from recon.validation import load_suite, suite_parameters

    suite = load_suite(semantics)
    rules = {e["meta"].get("verdict"): e for e in suite["expectations"] if "verdict" in e["meta"]}
    tolerated = {"at_most_once": "lost", "at_least_once": "duplicated"}.get(semantics)

    assert set(rules) == {v for v in (*ROW_VERDICTS, Verdict.TOPIC_DUPLICATE.value)} - {
        Verdict.DELIVERED.value,
        Verdict.PENDING.value,
        Verdict.EXCLUDED.value,  # counted and listed, never failing a run
    }
    for verdict in (Verdict.LOST, Verdict.DUPLICATED, Verdict.PHANTOM, Verdict.ABORTED_READ):
        kwargs = rules[verdict]["kwargs"]
        assert kwargs["value_set"] == [verdict]
        if verdict == tolerated:
            assert kwargs["mostly"] == {"$PARAMETER": f"{verdict}_mostly"}
            assert kwargs["row_condition"]["parameter"] == list(RATIO_BASE)
        else:
            assert "mostly" not in kwargs, f"{semantics} must forbid {verdict}"
    # late: a share of the judged messages under every semantic (latency is no delivery claim)
    late = rules[Verdict.LATE]
    assert late["kwargs"]["value_set"] == [Verdict.LATE]
    assert late["kwargs"]["mostly"] == {"$PARAMETER": "late_mostly"}
    assert late["kwargs"]["row_condition"]["parameter"] == list(RATIO_BASE)
    assert late["meta"] == {
        "recon_rule": "late_ratio",
        "verdict": "late",
        "tolerance": "max_late_ratio",
    }
    # mismatched: forbidden under exactly_once, a share of the judged messages under the others
    mismatched = rules[Verdict.MISMATCHED]["kwargs"]
    if semantics == "exactly_once":
        assert "mostly" not in mismatched
    else:
        assert mismatched["mostly"] == {"$PARAMETER": "mismatched_mostly"}
    # each costs a Spark aggregate; the 14th is diverted's (issue 72)
    assert len(suite["expectations"]) <= 14
    cfg = _cfg(semantics, Tolerances(), idempotent=True)
    used = _placeholders(suite["expectations"])
    assert used == set(suite_parameters(cfg))
    assert used == set(suite["meta"]["recon"]["parameters"])


def test_suite_parameters_follow_the_pipeline() -> None:
    from recon.validation import suite_parameters

    tolerances = Tolerances(
        max_loss_ratio=0.1, max_unverifiable=3, max_invalid=4, max_late_ratio=0.2,
        max_mismatched_ratio=0.25, max_unpublished_ratio=0.05,
    )  # fmt: skip
    # only the placeholders of the pipeline's own suite: at_most_once tolerates no duplicates
    assert suite_parameters(_cfg("at_most_once", tolerances, idempotent=False)) == {
        "lost_mostly": 0.9,
        "late_mostly": 0.8,
        "mismatched_mostly": 0.75,
        "out_of_order_mostly": 1.0,
        "unpublished_mostly": 0.95,
        "diverted_mostly": 0.0,  # any share unless max_diverted_ratio is set
        "topic_duplicate_allowed": [False, True],
        "max_unverifiable": 3,
        "max_invalid": 4,
    }
    at_least = Tolerances(max_duplicate_ratio=0.07)
    assert suite_parameters(_cfg("at_least_once", at_least, idempotent=False)) == {
        "duplicated_mostly": 0.93,
        "late_mostly": 1.0,
        "mismatched_mostly": 1.0,
        "out_of_order_mostly": 1.0,
        "diverted_mostly": 0.0,
        "topic_duplicate_allowed": [False, True],
        "max_unverifiable": 0,
        "max_invalid": 0,
    }
    idempotent = suite_parameters(_cfg("exactly_once", Tolerances(), idempotent=True))
    assert idempotent == {
        "late_mostly": 1.0,
        "diverted_mostly": 0.0,
        "topic_duplicate_allowed": [False],
        "max_unverifiable": 0,
        "max_invalid": 0,
    }


def test_mostly_decides_like_the_contract_at_every_threshold() -> None:
    """GX's own ``mostly`` test with our parameter agrees with the contract's exact rule."""
    from great_expectations.expectations.expectation import _mostly_success

    from recon.validation import _mostly

    ratios = [i / 1000 for i in range(0, 1001, 7)] + [0.29, 0.07, 0.1, 0.3, 0.333, 1 / 3]
    for ratio in ratios:
        mostly = _mostly(ratio)
        exact = Fraction(str(ratio))
        for judged in range(1, 700):
            threshold = int(exact * judged)
            for count in {max(threshold - 1, 0), threshold, min(threshold + 1, judged)}:
                expected = count <= exact * judged
                assert _mostly_success(judged, count, mostly) == expected, (ratio, judged, count)


def test_unknown_or_stale_suites_are_refused(tmp_path: Path, monkeypatch: Any) -> None:
    from recon.validation import ValidationError, load_suite

    with pytest.raises(ValidationError, match="unknown semantics"):
        load_suite("maybe_once")
    stale = {"name": "exactly_once", "meta": {"recon": {"suite_version": 0}}, "expectations": []}
    (tmp_path / "exactly_once.json").write_text(json.dumps(stale), encoding="utf-8")
    monkeypatch.setenv("RECON_EXPECTATIONS_DIR", str(tmp_path))
    with pytest.raises(ValidationError, match="suite_version"):
        load_suite("exactly_once")


# --- the suites are generated from the contract table --------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _regenerate_command() -> str:
    spec = importlib.util.spec_from_file_location("gen_suites", ROOT / "scripts" / "gen_suites.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.COMMAND)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_committed_suite_is_the_generated_one(semantics: str) -> None:
    """The files in expectations/ are generated: a hand edit, or a table edit without
    regenerating, fails here with the command that fixes it."""
    from recon.validation import render_suite

    path = ROOT / "expectations" / f"{semantics}.json"
    committed = path.read_text(encoding="utf-8") if path.is_file() else ""
    generated = render_suite(semantics)
    if committed != generated:
        diff = difflib.unified_diff(
            committed.splitlines(keepends=True),
            generated.splitlines(keepends=True),
            f"{path.relative_to(ROOT)} (committed)",
            "generated from recon.contract.table.CONTRACT",
        )
        pytest.fail(
            f"{path.relative_to(ROOT)} differs from the suite generated from the contract table "
            f"(src/recon/contract/table.py); regenerate it from the repository root with: "
            f"{_regenerate_command()}\n" + "".join(list(diff)[:40]),
            pytrace=False,
        )


@pytest.mark.parametrize(
    ("semantics", "verdict", "rule", "counts", "tolerances"),
    [
        # exactly_once tolerating loss: 1 lost of 10 judged is within 10 %, 2 of 10 are not
        ("exactly_once", "lost", "ratio", {"delivered": 9, "lost": 1}, Tolerances(0.1)),
        ("exactly_once", "lost", "ratio", {"delivered": 8, "lost": 2}, Tolerances(0.1)),
        # at_least_once forbidding duplicates, even within max_duplicate_ratio
        ("at_least_once", "duplicated", "forbidden", {"delivered": 9, "duplicated": 1},
         Tolerances(max_duplicate_ratio=0.5)),
        # invalid rows allowed up to max_unverifiable instead of max_invalid
        ("at_most_once", "invalid", "count", {"delivered": 3, "invalid": 2},
         Tolerances(max_unverifiable=2)),
        # exactly_once refusing late messages, even within max_late_ratio
        ("exactly_once", "late", "forbidden", {"delivered": 9, "late": 1},
         Tolerances(max_late_ratio=0.5)),
    ],
    ids=["loss-within", "loss-over", "no-duplicates", "invalid-by-another-count", "no-late"],
)  # fmt: skip
def test_one_cell_of_the_table_drives_both_the_contract_and_the_suite(
    request: pytest.FixtureRequest,
    gx_dir: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    semantics: str,
    verdict: str,
    rule: str,
    counts: dict[str, int],
    tolerances: Tolerances,
) -> None:
    """Edit one cell of the table: the Python contract and the generated suite, run by GX on
    pandas, change their decision together and still agree, count by count."""
    from recon.contract.table import CONTRACT, Allowance, forbidden, up_to_count, up_to_ratio
    from recon.validation import build_suite, render_suite, suite_parameters

    cfg = _cfg(semantics, tolerances, idempotent=False, name=f"edited_{semantics}")
    before = evaluate_contract(semantics, counts, tolerances)
    suite_before = build_suite(semantics)
    cell = {
        "ratio": up_to_ratio("max_loss_ratio"),
        "forbidden": forbidden("{semantics} forbids {verdict} messages"),
        "count": up_to_count("max_unverifiable"),
    }[rule]
    assert CONTRACT[semantics][verdict] != cell, "the edit must change the table"
    monkeypatch.setitem(CONTRACT[semantics], verdict, cell)  # type: ignore[index]

    contract = evaluate_contract(semantics, counts, tolerances)
    suite = build_suite(semantics)
    (expectation,) = [e for e in suite["expectations"] if e["meta"].get("verdict") == verdict]
    assert contract != before  # the Python judgement follows the cell
    assert suite != suite_before  # and so does the generated suite
    assert expectation["meta"]["recon_rule"] == f"{verdict}_{cell.allowance.value}"
    if cell.allowance is Allowance.FORBIDDEN:
        assert "tolerance" not in expectation["meta"]
    else:
        assert expectation["meta"]["tolerance"] == cell.tolerance
    assert set(suite["meta"]["recon"]["parameters"]) == set(suite_parameters(cfg))

    # GX runs the generated suite, loaded from its file as in production
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / f"{semantics}.json").write_text(render_suite(semantics), "utf-8")
    monkeypatch.setenv("RECON_EXPECTATIONS_DIR", str(tmp_path / "suites"))
    outcome = _validate(request, "pandas", gx_dir, cfg, _rows(counts), f"edited-{verdict}")
    assert outcome.passed == contract.passed
    assert _gx_failures(outcome) == _violations(contract)
