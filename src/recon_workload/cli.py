"""``recon-workload``: run a scenario and print its one-line summary (or JSON), or list them.

recon-workload list
recon-workload run SCENARIO --messages N --partitions P --seed S [--run-tag T]
                   [--set NAME=VALUE ...] [--hold-until PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys

from recon_workload import SCENARIOS, HoldGate, WorkloadError, run_scenario


def _fault(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=NUMBER, got {text!r}") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recon-workload", description="Break delivery on purpose and record what broke."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the scenarios and their fault parameters")
    run = sub.add_parser("run", help="run one scenario and write its ledger")
    run.add_argument("scenario", choices=sorted(SCENARIOS))
    run.add_argument("--messages", type=int, default=200)
    run.add_argument("--partitions", type=int, default=3)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--run-tag", default=None, help="lowercase letters, digits, '_'")
    run.add_argument(
        "--set",
        dest="faults",
        type=_fault,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a fault parameter (see 'list'); repeatable",
    )
    run.add_argument(
        "--hold-until",
        metavar="PATH",
        default=None,
        help="keep the scenario's long transaction open until PATH exists (concurrent_writers),"
        " e.g. to run 'recon run' meanwhile",
    )
    run.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``recon-workload``.

    :param argv: arguments without the program name (default: ``sys.argv[1:]``).
    :returns: the process exit code.
    """
    args = _parser().parse_args(argv)
    if args.command == "list":
        for s in SCENARIOS.values():
            params = " ".join(f"{k}={v:g}" for k, v in s.defaults.items())
            print(f"{s.name}\n    {s.description}\n    parameters: {params}")
        return 0
    try:
        result = run_scenario(
            args.scenario,
            messages=args.messages,
            partitions=args.partitions,
            seed=args.seed,
            run_tag=args.run_tag,
            hold=HoldGate(release_file=args.hold_until) if args.hold_until else None,
            **dict(args.faults),
        )
    except WorkloadError as exc:
        print(f"recon-workload: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.as_json(), indent=2) if args.json else result.summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
