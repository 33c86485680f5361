"""``recon prune``: remove a pipeline's runs that ended before a date, and every file no run left
in place needs (``recon.prune`` says what stays); ``recon forget``: remove everything of a
pipeline no longer declared (``recon.prune.forget``)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime
from typing import Any

from recon.errors import ReconError

_DAYS = re.compile(r"^(\d+)d$")


def add_parser(sub: Any) -> None:
    prune = sub.add_parser(
        "prune", help="remove a pipeline's runs that ended before a date, and unneeded files"
    )
    prune.add_argument("--pipeline", required=True)
    prune.add_argument(
        "--before",
        required=True,
        help="an ISO date or time (UTC unless it says), or Nd for N days ago: runs that ended "
        "before it are removed",
    )
    prune.add_argument("--data-dir", help="where the pipeline's runs write (default: .state/data)")
    prune.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
    prune.add_argument("--json", action="store_true")

    forget = sub.add_parser(
        "forget", help="remove everything stored for a pipeline that is no longer declared"
    )
    forget.add_argument("--pipeline", required=True)
    forget.add_argument("--data-dir", help="where its runs wrote (default: .state/data)")
    forget.add_argument("--yes", action="store_true", help="remove; without it, only list")
    forget.add_argument("--json", action="store_true")


def parse_before(text: str, now: datetime | None = None) -> datetime:
    """``--before`` as an aware datetime.

    :raises ReconError: neither an ISO date or time nor ``Nd``.
    """
    from recon.prune import days_before

    days = _DAYS.match(text.strip())
    if days:
        return days_before(int(days.group(1)), now)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ReconError(
            f"--before {text!r}: not a date; give an ISO date or time (2026-10-01, "
            "2026-10-01T12:00+02:00) or a number of days ago (30d)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def run(args: argparse.Namespace) -> int:
    from recon.alert.text import shown
    from recon.config import load_pipelines
    from recon.prune import prune_pipeline
    from recon.stack.preflight import get_pipeline

    cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
    before = parse_before(args.before)
    plan = prune_pipeline(cfg, before, args.data_dir, dry_run=args.dry_run, progress=_progress)
    if args.json:
        print(json.dumps({**plan.as_dict(), "dry_run": args.dry_run}, indent=2))
        return 0
    verb = "would remove" if args.dry_run else "removed"
    print(f"pipeline {cfg.name}: {verb} {len(plan.runs)} runs that ended before "
          f"{before:%F %T %Z}, {len(plan.files)} files and folders "
          f"({plan.bytes / 1e6:.1f} MB)")  # fmt: skip
    for run_id, reason in plan.kept.items():
        print(f"  kept {shown(run_id)}: {reason}")
    return 0


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_forget(args: argparse.Namespace) -> int:
    from recon.config import declared_pipelines
    from recon.prune.forget import check_forgettable, forget
    from recon.run.services import default_data_dir

    check_forgettable(args.pipeline, declared_pipelines(args.pipelines))
    found = forget(args.pipeline, args.data_dir or default_data_dir(), dry_run=not args.yes,
                   progress=_progress)  # fmt: skip
    if args.json:
        print(json.dumps({**found.as_dict(), "dry_run": not args.yes}, indent=2))
        return 0
    verb = "removed" if args.yes else "would remove"
    size = sum(found.folders.values()) / 1e6
    print(f"pipeline {args.pipeline}: {verb} {found.runs} runs with every row of theirs, "
          f"{len(found.folders)} folders ({size:.1f} MB) and its GX objects"
          + ("" if args.yes else "; nothing removed: add --yes"))  # fmt: skip
    return 0
