"""``python -m recon_workload`` is ``recon-workload``."""

from __future__ import annotations

from recon_workload.cli import main

raise SystemExit(main())
