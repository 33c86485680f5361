-- The product's results in PostgreSQL, schema `recon`. Applied idempotently before every run.
-- Every result row is keyed by (pipeline, run_id): a re-run of the same run replaces its rows.
CREATE SCHEMA IF NOT EXISTS recon;

CREATE TABLE IF NOT EXISTS recon.runs (
    pipeline          text        NOT NULL,
    run_id            text        NOT NULL,
    semantics         text        NOT NULL,
    status            text        NOT NULL,          -- running | passed | failed | error
    started_at        timestamptz NOT NULL,
    finished_at       timestamptz,
    snapshot_at       timestamptz,
    window_spec       jsonb       NOT NULL DEFAULT '[]'::jsonb, -- per partition: from, to, lso, ...
    counts            jsonb       NOT NULL DEFAULT '{}'::jsonb, -- verdict -> count
    topic_duplicates  bigint      NOT NULL DEFAULT 0,
    rewinds           jsonb       NOT NULL DEFAULT '[]'::jsonb,
    new_partitions    jsonb       NOT NULL DEFAULT '[]'::jsonb,
    contract_passed   boolean,
    violations        jsonb       NOT NULL DEFAULT '[]'::jsonb,
    validation_url    text,
    ledger_path       text,
    sink_rows_scanned bigint      NOT NULL DEFAULT 0,
    duration_seconds  double precision,
    error             text,
    -- what the run started from, so a re-run of the same run id gives the same verdicts
    base_run_id       text,
    base_ledger_path  text,
    sink_seq_from     bigint,
    sink_seq_to       bigint,
    PRIMARY KEY (pipeline, run_id)
);

CREATE TABLE IF NOT EXISTS recon.offset_snapshots (
    pipeline          text        NOT NULL,
    run_id            text        NOT NULL,
    topic             text        NOT NULL,
    partition         integer     NOT NULL,
    log_start_offset  bigint      NOT NULL,
    last_stable_offset bigint     NOT NULL,
    high_watermark    bigint      NOT NULL,
    committed_offset  bigint,                         -- NULL: the group has committed nothing
    settled_offset    bigint,                         -- first offset younger than the settle time
    window_from       bigint      NOT NULL,
    window_to         bigint      NOT NULL,
    previous_committed bigint,
    rewound           boolean     NOT NULL DEFAULT false,
    new_partition     boolean     NOT NULL DEFAULT false,
    snapshot_at       timestamptz NOT NULL,
    PRIMARY KEY (pipeline, run_id, topic, partition)
);

CREATE TABLE IF NOT EXISTS recon.discrepancies (
    pipeline        text        NOT NULL,
    run_id          text        NOT NULL,
    verdict         text        NOT NULL,
    message_id      text,
    topic           text,
    partition       integer,
    offsets         bigint[]    NOT NULL DEFAULT '{}',
    first_offset    bigint,
    sink_keys       text[]      NOT NULL DEFAULT '{}',
    sink_count      bigint      NOT NULL DEFAULT 0,
    topic_duplicate boolean     NOT NULL DEFAULT false,
    detail          text,
    detected_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS discrepancies_run ON recon.discrepancies (pipeline, run_id);
-- By the id's digest, not its text: a btree entry holds at most about 2.7 kB, and an id is user
-- data (the index on the text refused a run's commit over one phantom id of a few kB, run after
-- run). Lookups match md5(message_id) and then the text (recon.store.corrections).
DROP INDEX IF EXISTS recon.discrepancies_message;
CREATE INDEX IF NOT EXISTS discrepancies_message_md5 ON recon.discrepancies (pipeline, md5(message_id));

-- Where the last successful run stopped, per partition, and the sink's ingest sequence. Advanced
-- only in the transaction that commits that run's results.
CREATE TABLE IF NOT EXISTS recon.watermarks (
    pipeline      text    NOT NULL,
    topic         text    NOT NULL,
    partition     integer NOT NULL,
    next_offset   bigint  NOT NULL,
    committed_offset bigint,
    run_id        text    NOT NULL,
    PRIMARY KEY (pipeline, topic, partition)
);

CREATE TABLE IF NOT EXISTS recon.pipeline_state (
    pipeline        text PRIMARY KEY,
    sink_seq        bigint,        -- highest ingest sequence reconciled (NULL: scan the whole sink)
    ledger_path     text,          -- the current ledger version
    run_id          text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS recon.alerts (
    pipeline    text        NOT NULL,
    run_id      text        NOT NULL,
    channel     text        NOT NULL,   -- webhook | email | airflow | <notifier>:<connection> (a declared route)
    status      text        NOT NULL,   -- sent | failed
    sent_at     timestamptz NOT NULL DEFAULT now(),
    summary     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    error       text,
    PRIMARY KEY (pipeline, run_id, channel)
);

CREATE INDEX IF NOT EXISTS runs_pipeline_started ON recon.runs (pipeline, started_at DESC);

-- The sink's position beside its ingest sequence (recon.sink_position): the database snapshot
-- the sequence was read in, and the floor below which no transaction then open held a
-- sequence. Rows committing late are read by the next run from these.
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS sink_snapshot_from text;
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS sink_snapshot_to text;
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS sink_floor_from bigint;
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS sink_floor_to bigint;
ALTER TABLE recon.pipeline_state ADD COLUMN IF NOT EXISTS sink_snapshot text;
ALTER TABLE recon.pipeline_state ADD COLUMN IF NOT EXISTS sink_floor bigint;

-- A verdict a later run proved wrong (a message judged lost whose sink row committed late):
-- the later run's id on the earlier row, and per run the number of its rows corrected so.
ALTER TABLE recon.discrepancies ADD COLUMN IF NOT EXISTS corrected_by_run text;
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS corrections jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Delivery latency per run (sink.time_column minus the record's Kafka timestamp), per partition
-- and over the whole run (partition -1), in milliseconds; exact nearest-rank percentiles.
-- bound_ms is the pipeline's latency.max_seconds when it declares one; timestamp_type says which
-- Kafka timestamp the latency is counted from (null: the topic's configuration was unreadable).
CREATE TABLE IF NOT EXISTS recon.latency (
    pipeline    text    NOT NULL,
    run_id      text    NOT NULL,
    partition   integer NOT NULL,              -- -1: the whole run
    messages    bigint  NOT NULL,              -- judged messages with a latency
    negative    bigint  NOT NULL,              -- of those, below zero (clock skew)
    min_ms      bigint  NOT NULL,
    p50_ms      bigint  NOT NULL,
    p95_ms      bigint  NOT NULL,
    p99_ms      bigint  NOT NULL,
    max_ms      bigint  NOT NULL,
    bound_ms    bigint,
    timestamp_type text,                       -- CreateTime | LogAppendTime (the topic's)
    PRIMARY KEY (pipeline, run_id, partition)
);

-- What a declared check could not use in a run, by reason, only the reasons that occurred:
-- untimed_records / untimed_sink_rows (no Kafka timestamp, a null time column: no latency),
-- unordered_records / unordered_sink_rows (no upsert key or position: no order check),
-- shared_keys (upsert keys with more than one sink row).
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS unchecked jsonb NOT NULL DEFAULT '{}'::jsonb;

-- A run with a source (three-way): its way from source to sink (produced, published, committed,
-- delivered), the findings beside it (unsourced, source_invalid, source_duplicates) and the
-- first unsourced messages (unsourced_sample); NULL for a run without a source.
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS funnel jsonb;

-- What the catalogs said when step 1 planned the run (recon.engines.plan.Catalog): the sink
-- table's description, a source table's time type and uniqueness, the topic's timestamp type.
-- The run's later steps read these instead of asking again; NULL for runs recorded before.
ALTER TABLE recon.runs ADD COLUMN IF NOT EXISTS catalog jsonb;

-- Repair plans (recon.repair): what a plan would change, where it stands, who applied it.
-- status: planned | applying (sink changed or replays started, not finished) | applied |
-- verified | failed (set by the first run after the apply that could judge it) | refused (its
-- first apply found the sink changed since the plan, and changed nothing).
CREATE TABLE IF NOT EXISTS recon.repairs (
    plan_id         text        PRIMARY KEY,
    pipeline        text        NOT NULL,
    run_id          text        NOT NULL,            -- the run whose results the plan repairs
    created_at      timestamptz NOT NULL DEFAULT now(),
    status          text        NOT NULL,
    plan            jsonb       NOT NULL,            -- the plan as its file holds it
    applied_by      text,
    applied_at      timestamptz,
    replay_from     jsonb,                           -- per partition of the replay topic: its end before the first replay
    replayed        jsonb       NOT NULL DEFAULT '[]'::jsonb, -- message_id, partition, offset per replay
    deleted         bigint      NOT NULL DEFAULT 0,
    verified_by_run text,
    verified_at     timestamptz,
    detail          text
);
CREATE INDEX IF NOT EXISTS repairs_pipeline ON recon.repairs (pipeline, created_at DESC);

-- Who last claimed a run id (recon.store.claims): the claim itself is an advisory lock, this row
-- only names its holder in the error another process gets.
CREATE TABLE IF NOT EXISTS recon.run_claims (
    pipeline text        NOT NULL,
    run_id   text        NOT NULL,
    host     text        NOT NULL,
    pid      integer     NOT NULL,
    since    timestamptz NOT NULL,
    PRIMARY KEY (pipeline, run_id)
);

-- The version of this file last applied (its SHA-256), so that a run skips the DDL above, and
-- its table locks, when nothing changed.
CREATE TABLE IF NOT EXISTS recon.schema_version (version text NOT NULL);

-- Compacted topics (issue 70): the topic's cleanup.policy at the snapshot (NULL: not readable),
-- and how many offsets of [read_from, pending_to) the run found without a committed record
-- (set once the window is read; NULL before, 0 when none). On a compacted topic such gaps are
-- records the log cleaner may have removed: sink rows without a record are unverifiable there.
ALTER TABLE recon.offset_snapshots ADD COLUMN IF NOT EXISTS cleanup_policy text;
ALTER TABLE recon.offset_snapshots ADD COLUMN IF NOT EXISTS missing_offsets bigint;
