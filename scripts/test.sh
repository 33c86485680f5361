#!/usr/bin/env bash
# The whole suite: lint, then the unit, integration and system tiers against the real services.
# Starts what is not running and stops, at the end, only what it started.
set -euo pipefail
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/test-env.sh"
here="$(dirname "$0")"

note_stopped_services postgres kafka kafka-replica connect airflow
airflow_start=""
finish() {
  # A start still going on would leave Airflow running after the suite: let it end, then stop.
  if [ -n "$airflow_start" ]; then wait "$airflow_start" 2>/dev/null || true; fi
  stop_started
}
# Each tier's wall time, printed again at the very end (also when a tier fails): where the
# suite's minutes went, without scrolling back through each tier's output.
tier_times=()
suite_start=$SECONDS
timed() {  # <what> <command...>: runs the command, notes its wall time under <what>
  local what="$1" start=$SECONDS status=0
  shift
  "$@" || status=$?
  tier_times+=("$(printf '%5ds  %s' "$((SECONDS - start))" "$what")")
  return "$status"
}
print_times() {
  [ "${#tier_times[@]}" -gt 0 ] || return 0
  say "wall time per tier (the slowest tests of each are listed under its output)"
  printf '  %s\n' "${tier_times[@]}"
  printf '%7ds  the whole suite\n' "$((SECONDS - suite_start))"
}
trap 'print_times; finish' EXIT

mkdir -p "$RECON_ROOT/test-artifacts"
# Lint beside the services' start: on a fresh clone mypy takes about 30 s of one core while the
# services mostly wait on their own starts. A lint failure still fails the suite, before any test.
lint_log="$RECON_ROOT/test-artifacts/lint.log"
say "lint (beside the services' start): ruff check, ruff format --check, mypy"
bash "$here/lint.sh" > "$lint_log" 2>&1 &
lint_pid=$!

say "starting the services the tests need"
bash "$here/up.sh" --no-airflow
# Airflow's metadata database now (the unit tier's DAG integrity test parses the DAGs, which reads
# it); its processes start beside the unit tier, which talks to none of them, and the integration
# tier waits for them.
bash "$here/airflow.sh" init
airflow_log="$RECON_ROOT/test-artifacts/airflow-start.log"
bash "$here/airflow.sh" start > "$airflow_log" 2>&1 &
airflow_start=$!

# Waits for a step started in the background, prints what it wrote, fails the suite if it failed.
wait_for_step() {  # <pid> <log> <what>
  local status=0
  wait "$1" || status=$?
  cat "$2"
  if [ "$status" != 0 ]; then say "$3 failed (exit $status): no further tests run"; exit "$status"; fi
}
wait_for_step "$lint_pid" "$lint_log" "lint"
cd "$RECON_ROOT"
# --durations=25: each tier ends with its 25 slowest tests (set-up and teardown counted apart).
pytest_tier() { python -m pytest -p no:cacheprovider --durations=25 "$@"; }
run_tests() {  # <what> <pytest args...>
  local what="$1"
  say "tests: $what"
  shift
  local status=0
  timed "$what" pytest_tier "$@" || status=$?
  # 5 = no tests collected: fine while a tier is still empty.
  if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
}
# The unit tier starts no JVM (issue 71: its Spark tests moved to the integration tier). When it
# was mostly tiny Spark jobs waiting on the JVM's scheduling, three workers took 5:02 instead of
# 5:38 for two (same machine, same hour, 1226 tests). The integration tier is CPU-bound: three
# workers there gained nothing.
# The serial integration tests mostly wait too (a frozen broker, a held lock, Kafka's restart)
# and the unit tier uses no service: they run beside it, those that need Airflow up or restart
# the PostgreSQL Airflow is starting on (after_airflow) excepted. One after the other they took
# 6:09 + 5:45 (CI of fa185cc); side by side 9:47 (unit 8:56, serial 9:44; same machine, 2026-11-27).
unit_log="$RECON_ROOT/test-artifacts/unit.log"
say "tests: unit tier, three at a time (its output once it ends: $unit_log), beside the serial"
say "integration tests that neither need Airflow nor restart PostgreSQL"
unit_time="$RECON_ROOT/test-artifacts/unit.seconds"
# Once the unit tier ends, the serial tests still have minutes to go (CI of 2026-12-06: unit
# 108 s, serial 294 s), much of it waiting on Kafka's restarts and timeouts: the integration tests
# that use no service (marked no_services by tests/integration/conftest.py: Spark or DuckDB over
# relations of their own; 14 files, the two longest 214 s and 110 s alone) fill that time, two
# at a time, rather than the two-at-a-time tier's. A broker killed under them changes nothing
# they read.
spared_log="$RECON_ROOT/test-artifacts/no-services.log"
spared_time="$RECON_ROOT/test-artifacts/no-services.seconds"
rm -f "$unit_time" "$spared_time"
# Each tier's own time, written by its subshell: the serial tests beside it may end later.
(
  start=$(date +%s) status=0
  pytest_tier -m unit -n 3 --dist loadfile "$@" || status=$?
  echo "$(($(date +%s) - start))" > "$unit_time"
  exit "$status"
) > "$unit_log" 2>&1 &
unit_pid=$!
(
  # After the unit tier (its time written), whatever its outcome: a failure of it is reported
  # below all the same. Its subshell's end as well: one that died writes no time.
  while [ ! -f "$unit_time" ] && kill -0 "$unit_pid" 2>/dev/null; do sleep 1; done
  start=$(date +%s) status=0
  pytest_tier -m "integration and no_services" -n 2 --dist loadfile --no-loadscope-reorder \
    "$@" || status=$?
  echo "$(($(date +%s) - start))" > "$spared_time"
  exit "$status"
) > "$spared_log" 2>&1 &
spared_pid=$!
serial_status=0
timed "integration tier, the serial ones beside the unit tier" \
  pytest_tier -m "integration and serial and not after_airflow" "$@" || serial_status=$?
unit_status=0
wait "$unit_pid" || unit_status=$?
tier_times+=("$(printf '%5ss  %s' "$(cat "$unit_time" 2>/dev/null || echo '?')" "unit tier")")
spared_status=0
wait "$spared_pid" || spared_status=$?
tier_times+=("$(printf '%5ss  %s' "$(cat "$spared_time" 2>/dev/null || echo '?')" \
  "integration tier, those without services, after the unit tier beside the serial ones")")
say "tests: unit tier"
cat "$unit_log"
say "tests: integration tier, those that use no service (after the unit tier, two at a time)"
cat "$spared_log"
for status in "$serial_status" "$unit_status" "$spared_status"; do
  if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
started="$airflow_start"
airflow_start=""
wait_for_step "$started" "$airflow_log" "Airflow's start"
# Integration tests mostly wait (JVM starts, Kafka, PostgreSQL), so two run at once, a test file
# per worker: each test owns its pipeline, topic and tables. Files are handed out in collection
# order (tests/integration/conftest.py puts the longest first); without --no-loadscope-reorder
# pytest-xdist would hand out the files with the most tests first instead, and leave long files
# of one or two tests for the end. Those marked serial kill, restart or lock a service every test
# shares; they ran beside the unit tier, or run now, alone.
run_tests "integration tier, two at a time" -m "integration and not serial and not no_services" \
  -n 2 --dist loadfile \
  --no-loadscope-reorder "$@"
run_tests "integration tier, the serial ones that need Airflow or restart PostgreSQL" \
  -m "integration and after_airflow" "$@"
# Two DAG runs at once (most of a run is waiting: spark-submit's JVM, the scheduler's polling),
# whole files per worker, the files with the most tests first: test_airflow_faults.py, whose tests
# share one retried DAG run (a session fixture: one worker must run them all), on one worker; the
# `dags test` runs, the backfill and the rest on the other. Not --dist loadgroup: under pytest 9.2
# its xdist_group marks are ignored and tests are handed out one by one (CI of 14b2aeb ran so and
# made the retried run twice, 180 s more).
run_tests "system tier, two at a time" -m system -n 2 --dist loadfile "$@"
say "all tests passed"
