"""A membership filter of a cold ledger segment's messageIds: a blocked Bloom filter over 64-bit
hashes of the ids, in numpy, stored beside the segment's Parquet.

Why: a run must learn which of its messages earlier runs judged. Scanning every segment's ids
costs each run in proportion to all history; probing a filter costs a few bytes per id of
history (read from the page cache) and a fixed amount per id of the run. Only the run's ids
the filter lets through (its true cold facts and about :data:`FALSE_POSITIVE_RATE` of the rest)
are looked up in the segment, whose rows are sorted by messageId so that a lookup reads only the
row groups it needs.

The layout is Parquet's split-block Bloom filter: ``BITS_PER_ID`` bits per id, in blocks of
256 bits, eight 32-bit words; a hash picks its block with its upper 32 bits and one bit in each
word with its lower 32, so a probe reads one block (32 bytes), not eight places across the
filter, and numpy probes a run's ids in a few whole-array steps (~0.1 s per million). Measured
with 10M ids in and 1M other ids probed: 24 bits per id let 161 through, 32 bits 35 (kept:
about 4 in 100,000; ``tests/unit/test_ledger_membership.py`` bounds it). There are no false
negatives: every id added is found.

The hash is computed by whoever writes and reads (the local store: DuckDB's ``hash``). Its
*check*, the hash of :data:`CHECK_TEXT`, is stored with the filter; a reader whose hash of that
text differs (another hash function, or a changed one after an upgrade) must not use the filter,
and scans the segment instead: slower, never wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

FORMAT = "recon-split-block-bloom-1"
# Named as Hadoop hides files (a leading underscore): Spark reads the directory as Parquet.
HEADER = "_membership.json"
BITS = "_membership.bits"
CHECK_TEXT = "recon ledger membership"
BITS_PER_ID = 32
#: Absent ids let through, about (measured with the parameters above).
FALSE_POSITIVE_RATE = 4e-5
_WORDS = 8  # 32-bit words per 256-bit block, one bit set in each per id
# Odd multipliers, one per word, that spread a hash's lower 32 bits over its 32 bits (those of
# Parquet's split-block Bloom filter).
_SALT = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947,
     0x5C6BFB31],
    dtype=np.uint32,
)  # fmt: skip


@dataclass(frozen=True)
class MembershipFilter:
    """:param bits: ``(blocks, 8)`` uint32 words (a memory map when read from disk).
    :param ids: how many ids were added."""

    bits: np.ndarray
    ids: int

    @property
    def blocks(self) -> int:
        return int(self.bits.shape[0])

    def might_contain(self, probe: Probe) -> np.ndarray:
        """A boolean mask over the probe's hashes: False means surely absent."""
        # a block's eight 32-bit words compared as four 64-bit ones: half the steps
        words = self.bits.view(np.uint64)[probe.blocks(self.blocks)]
        return np.asarray(((words & probe.wide_masks) == probe.wide_masks).all(axis=1))


class Probe:
    """Hashes to test against filters: what does not depend on a filter's size is computed
    once, for all of them. The hashes are sorted: their blocks then come in order in every
    filter, and reading them is a pass over the filter instead of random reads (0.02 s for a
    million, not 0.05).

    :param hashes: uint64.
    :param keep_order: also keep :attr:`order`, where each sorted hash was in ``hashes`` (for a
        caller that must map what passes back to its rows; sorting alone is cheaper)."""

    def __init__(self, hashes: np.ndarray, keep_order: bool = False) -> None:
        hashes = np.asarray(hashes, dtype=np.uint64)
        self.order: np.ndarray | None = None
        if keep_order:
            self.order = np.argsort(hashes)
            self.hashes = hashes[self.order]
        else:
            self.hashes = np.sort(hashes)
        self.upper = self.hashes >> np.uint64(32)
        self.masks = _masks(self.hashes)
        self.wide_masks = self.masks.view(np.uint64)

    def blocks(self, blocks: int) -> np.ndarray:
        """Each hash's block in a filter of ``blocks`` blocks, by its upper 32 bits."""
        # both factors below 2**32: the product fits, its upper half is a block in [0, blocks)
        return ((self.upper * np.uint64(blocks)) >> np.uint64(32)).astype(np.int64)


def blocks_for(ids: int) -> int:
    return max(1, -(-ids * BITS_PER_ID // (_WORDS * 32)))


def build(hash_chunks: Iterable[np.ndarray], ids: int) -> MembershipFilter:
    """A filter of ``ids`` ids whose hashes come in chunks (a segment's ids need not fit in
    memory at once)."""
    bits = np.zeros((blocks_for(ids), _WORDS), dtype=np.uint32)
    for chunk in hash_chunks:
        probe = Probe(chunk)
        if not len(probe.hashes):
            continue
        blocks, masks = probe.blocks(bits.shape[0]), probe.masks
        # A block may take several ids of one chunk: OR their masks together first (fancy
        # assignment would keep only one of them).
        order = np.argsort(blocks, kind="stable")
        blocks, masks = blocks[order], masks[order]
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        bits[blocks[starts]] |= np.bitwise_or.reduceat(masks, starts, axis=0)
    return MembershipFilter(bits, ids)


def _masks(hashes: np.ndarray) -> np.ndarray:
    """The bit each hash sets in each word of its block, by its lower 32 bits."""
    lower = (hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return np.asarray(
        np.left_shift(np.uint32(1), (lower[:, None] * _SALT[None, :]) >> np.uint32(27))
    )


def write(directory: str, found: MembershipFilter, check: int) -> None:
    """Store the filter in ``directory`` (the segment's), bits first: a header without its bits
    is never left behind."""
    found.bits.tofile(os.path.join(directory, BITS))
    header = {"format": FORMAT, "ids": found.ids, "blocks": found.blocks, "check": str(check)}
    with open(os.path.join(directory, HEADER), "w", encoding="utf-8") as fh:
        json.dump(header, fh)


def read(directory: str, check: int) -> MembershipFilter | None:
    """The filter stored in ``directory``, or None when there is none, or one this reader
    cannot use (another format, or a hash whose check differs from ``check``)."""
    try:
        with open(os.path.join(directory, HEADER), encoding="utf-8") as fh:
            header = json.load(fh)
    except (OSError, ValueError):
        return None
    if header.get("format") != FORMAT or header.get("check") != str(check):
        return None
    blocks = int(header["blocks"])
    path = os.path.join(directory, BITS)
    if not os.path.isfile(path) or os.path.getsize(path) != blocks * _WORDS * 4:
        return None
    bits = np.memmap(path, dtype=np.uint32, mode="r", shape=(blocks, _WORDS))
    return MembershipFilter(bits, int(header["ids"]))
