"""``make bench``: the product against a hand-written Python reconciler, DuckDB and the raw I/O
floor, on the same data, on this machine. ``python -m bench.run`` drives it; the figures land in
``docs/benchmarks.md``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

_START = time.monotonic()


def progress(line: str, transient: bool = False) -> None:
    """One line on stderr with the time since the bench started (transient lines overwrite)."""
    minutes, seconds = divmod(int(time.monotonic() - _START), 60)
    text = f"[bench {minutes:02d}:{seconds:02d}] {line}"
    if transient and sys.stderr.isatty():
        sys.stderr.write("\r" + text[:150].ljust(150))
    elif not transient:
        if sys.stderr.isatty():
            sys.stderr.write("\r" + " " * 150 + "\r")
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def script(
    name: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``scripts/NAME ARGS`` of the checkout, its output captured; the caller reads the status.

    :param env: the script's whole environment (default: the bench's)."""
    root = os.environ["RECON_ROOT"]
    return subprocess.run(["bash", os.path.join(root, "scripts", name), *args], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
