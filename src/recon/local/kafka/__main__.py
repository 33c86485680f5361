"""A Kafka reader process, as :func:`recon.local.kafka.pool.read_ranges` starts it:
``python -m recon.local.kafka`` (a fresh interpreter: librdkafka's threads do not survive a fork).
"""

from __future__ import annotations

import sys

from recon.local.kafka.reader import main

if __name__ == "__main__":
    sys.exit(main())
