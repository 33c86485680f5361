"""A Kafka reader process, as :func:`recon.read.kafka_local.pool.read_ranges` starts it:
``python -m recon.read.kafka_local`` (a fresh interpreter: librdkafka's threads do not survive a
fork).
"""

from __future__ import annotations

import sys

from recon.read.kafka_local.reader import main

if __name__ == "__main__":
    sys.exit(main())
