"""A stream processor as a hop: consume the input topic, transform each record (a field added to
its JSON value, its messageId kept), produce it to the output topic, commit the input offsets
(:mod:`recon_workload.processor`, killed at its crash window).

- ``stream_processor_at_least_once``: no transactions; killed after the batch was produced and
  acknowledged, before the input offsets were committed: the restarted processor produces the
  batch again (duplicated in the output).
- ``stream_processor_exactly_once``: one transaction per batch, the input offsets committed in
  it (``send_offsets_to_transaction``); killed before ``commit_transaction``: the output holds
  aborted records, and read ``read_committed`` every message exactly once.

The hop's source is the input topic, its target the output topic (same cluster); the ground truth
is a read-back of both (:mod:`recon_workload.hop`), the claimed offsets the processor group's.
The output topic is then a pipeline's source for a second hop (consumer -> PostgreSQL):
``stream_processor_to_table``, whose ground truth is that hop's (the standard ledger).
"""

from __future__ import annotations

from recon_workload import kafka_io, sink
from recon_workload.hop import KafkaTarget
from recon_workload.processor import ProcessorSpec
from recon_workload.producers import IDEMPOTENT, plan, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.scenarios import _consume, _kill_plan
from recon_workload.supervisor import supervise

STREAM_DEFAULTS = {"kill_rate": 0.2}
TO_TABLE_DEFAULTS = {"kill_rate": 0.2, "sink_kill_rate": 0.1}


def _processed(run: Run, transactional: bool) -> Outcome:
    names = run.names
    source, output = names.topic("in"), names.topic()
    kafka_io.create_topics(run.conf, [source, output], run.partitions)
    messages = plan(names.run_tag, run.messages, run.seed)
    produced = send_all({**run.conf, **IDEMPOTENT}, source, messages, run.progress)
    group = names.group("processor")
    spec = ProcessorSpec(
        input_topic=source,
        output_topic=output,
        partitions=run.partitions,
        group=group,
        transactional_id=f"{names.group()}-processor" if transactional else None,
        batch_size=run.batch_size,
        transform=True,
    )
    how = "transactional" if transactional else "at-least-once"
    run.progress.step(f"{how} processor {source} -> {output}, kill rate {run.rates['kill_rate']}")
    stage = supervise(
        "recon_workload.processor",
        spec.to_json(),
        _kill_plan(run, run.rates["kill_rate"], 0),
        run.progress,
        "processor",
    )
    run.faults["processor_kills"] = len(stage.kills)
    run.faults["processor_starts"] = stage.starts
    target = KafkaTarget(kafka_io.KAFKA_CONN_ID, run.conf, output)
    return Outcome(source, [source, output], group, produced, target=target)


def stream_processor_at_least_once(run: Run) -> Outcome:
    """A consume-transform-produce processor without transactions, killed after producing a batch
    and before committing its input offsets: the restarted one produces the batch again
    (duplicated in the output topic)."""
    return _processed(run, transactional=False)


def stream_processor_exactly_once(run: Run) -> Outcome:
    """A consume-transform-produce processor, one transaction per batch with its input offsets
    (send_offsets_to_transaction), killed before committing: the output holds aborted records;
    read read_committed, every message is delivered exactly once."""
    return _processed(run, transactional=True)


def stream_processor_to_table(run: Run) -> Outcome:
    """The second hop of a processor's flow: the at-least-once processor (killed between produce
    and commit: records twice in its output topic), then a consumer writing the output topic to
    PostgreSQL (write, then commit); the ground truth is this hop's, output topic -> table
    (a message the processor wrote twice is duplicated with topic_duplicate)."""
    outcome = _processed(run, transactional=False)
    with sink.transaction() as cur:
        sink.create_tables(cur, run.names.table, ())
    _consume(run, "write_then_commit", outcome.topics[1], run.rates["sink_kill_rate"], stage=1)
    output = outcome.topics[1]
    return Outcome(output, outcome.topics, run.names.group(), outcome.produced)
