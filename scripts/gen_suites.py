"""Rewrite the Great Expectations suites of ``expectations/`` from the contract table (issue 16).

The suites are generated from ``recon.contract.table.CONTRACT`` by
``recon.validation.suites.render_suite``; ``tests/unit/test_suite_files.py`` fails when a
committed file differs. After changing the table, run from the repository root::

    bash scripts/with-env.sh python scripts/gen_suites.py          # rewrite the stale files
    bash scripts/with-env.sh python scripts/gen_suites.py --check  # change nothing; exit 1 if stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The command that regenerates the suites, as the stale-suite test tells it.
COMMAND = "bash scripts/with-env.sh python scripts/gen_suites.py"


def stale_suites(write: bool) -> list[Path]:
    """The suite files that differ from the generated ones (absent ones included).

    :param write: rewrite each stale file with the generated text.
    """
    # This checkout's package: the virtualenv's editable install may point at another checkout.
    sys.path.insert(0, str(ROOT / "src"))
    from recon.model.verdicts import SEMANTICS
    from recon.validation.suites import render_suite

    stale = []
    for semantics in SEMANTICS:
        path = ROOT / "expectations" / f"{semantics}.json"
        text = render_suite(semantics)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if write:
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
    return stale


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only list) the stale suites; 1 when ``--check`` finds one.

    :param argv: the command line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = stale_suites(write=not args.check)
    for path in stale:
        verb = "stale" if args.check else "rewritten"
        print(f"{path.relative_to(ROOT)}: {verb}")
    if not stale:
        print("expectations/: every suite matches the contract table")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
