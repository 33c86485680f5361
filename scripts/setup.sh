#!/usr/bin/env bash
# Installs what is missing, and only that: the Python environment, the JVM jars, PostgreSQL's server
# packages, the OS user that owns the database cluster, and the generated local secrets.
set -euo pipefail
. "$(dirname "$0")/env.sh"

command -v java >/dev/null || die "no Java found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null || die "no Maven found: install it (apt-get install maven)"
PY="${RECON_PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || die "Python 3.11 is needed ($PY is $("$PY" -V 2>&1)); set RECON_PYTHON to a 3.11 interpreter"
mkdir -p "$RECON_STATE"

stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# --- Python environment -------------------------------------------------------------------------
install_venv "$PY" "$RECON_VENV" "installing the Python environment into .venv (a few minutes the first time)"

# --- JVM jars from Maven Central ----------------------------------------------------------------
# One folder per profile of jvm/pom.xml, fetched again only when that profile (or the pom's
# properties) changed: adding a profile does not fetch the running broker's jars anew. The
# connect-plugin-<name> profiles land in the Connect worker's plugin folder, one folder each.
pom_profiles() { python3 - "$RECON_ROOT/jvm/pom.xml" "$@" <<'EOPY'
import hashlib, sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
root = ET.parse(sys.argv[1]).getroot()
profiles = {p.findtext("m:id", namespaces=ns): p for p in root.iterfind("m:profiles/m:profile", ns)}
if len(sys.argv) == 2:
    print("\n".join(profiles))
else:  # the hash of one profile: its own block and the versions it may use
    blocks = [root.find("m:properties", ns), profiles[sys.argv[2]]]
    for element in blocks:
        element.tail = None  # the white space after it, which a neighbour's edit changes
    block = b"".join(ET.tostring(element) for element in blocks)
    print(hashlib.sha256(block).hexdigest()[:16])
EOPY
}
profile_dir() {
  case "$1" in
    connect-plugin-*) echo "$RECON_CONNECT_PLUGINS/${1#connect-plugin-}" ;;
    *) echo "$RECON_STATE/jars/$1" ;;
  esac
}
mkdir -p "$RECON_STATE/jars" "$RECON_CONNECT_PLUGINS"
# Through a variable: a failure inside a process substitution would pass `set -e` unseen.
profile_list=$(pom_profiles) || die "jvm/pom.xml could not be read (above)"
mapfile -t profiles <<< "$profile_list"
[ "${#profiles[@]}" -gt 0 ] || die "jvm/pom.xml names no profile"
for profile in "${profiles[@]}"; do
  out=$(profile_dir "$profile")
  hash=$(pom_profiles "$profile")
  stamp="$RECON_STATE/jars/$profile.stamp"
  if [ -d "$out" ] && stamp_ok "$stamp" "$hash"; then continue; fi
  say "fetching the $profile jars from Maven Central"
  # Into a fresh folder first: an interrupted fetch leaves no half folder behind a stamp.
  rm -rf "$out.new"
  mvn -B -Dstyle.color=never -s "$RECON_ROOT/jvm/settings.xml" -f "$RECON_ROOT/jvm/pom.xml" -P "$profile" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$out.new" \
    >"$RECON_STATE/jars/mvn-$profile.log" 2>&1 \
    || die "Maven could not fetch the $profile jars (see .state/jars/mvn-$profile.log): is Maven Central reachable?"
  if [ "$profile" = spark ]; then
    # pyspark ships Spark's own jars and their dependencies: keep only what it lacks, so two
    # versions of one library never meet on Spark's classpath.
    pyspark_jars="$("$RECON_VENV/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
    for jar in "$out.new"/*.jar; do
      base=$(basename "$jar" | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?\.jar$//')
      if compgen -G "$pyspark_jars/$base-[0-9]*.jar" >/dev/null; then rm -f "$jar"; fi
    done
  fi
  rm -rf "$out" && mv "$out.new" "$out"
  echo "$hash" > "$stamp"
done
rm -f "$RECON_STATE/jars/.stamp"  # the whole pom's stamp of earlier checkouts
# A plugin whose profile was removed leaves the worker's plugin folder.
for folder in "$RECON_CONNECT_PLUGINS"/*/; do
  [ -d "$folder" ] || continue
  name=$(basename "$folder")
  if ! printf '%s\n' "${profiles[@]}" | grep -qx "connect-plugin-$name"; then
    rm -rf "$folder" "$RECON_STATE/jars/connect-plugin-$name.stamp"
  fi
done

# --- Spark's classes recorded once for its JVMs to share (recon.spark.class_archive) ----------
"$RECON_VENV/bin/python" -m recon.spark.class_archive

# --- PostgreSQL server packages and its OS user -------------------------------------------------
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  say "installing PostgreSQL from Debian's packages"
  [ "$(id -u)" = 0 ] || die "PostgreSQL's server is missing and installing it needs root: sudo apt-get install postgresql"
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql) >/dev/null \
    || die "apt-get could not install postgresql"
fi
if ! id "$RECON_PG_OS_USER" >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || die "the OS user $RECON_PG_OS_USER is missing and creating it needs root"
  say "creating the OS user $RECON_PG_OS_USER that owns the project's database cluster"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$RECON_PG_OS_USER"
fi

# --- local secrets, generated once --------------------------------------------------------------
if [ ! -f "$RECON_STATE/secrets.env" ]; then
  pw=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20)
  apw=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 16)
  jwt=$(head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 48)
  write_private "$RECON_STATE/secrets.env" <<EOS
export RECON_PG_PASSWORD='$pw'
export RECON_AIRFLOW_ADMIN_PASSWORD='$apw'
export AIRFLOW__API_AUTH__JWT_SECRET='$jwt'
export AIRFLOW__API__SECRET_KEY='$jwt'
EOS
fi
# Secrets added after a checkout's first setup are appended, never regenerated.
if ! grep -q RECON_KAFKA_SASL_PASSWORD "$RECON_STATE/secrets.env"; then
  kpw=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20)
  echo "export RECON_KAFKA_SASL_PASSWORD='$kpw'" >> "$RECON_STATE/secrets.env"
fi
if ! grep -q SPARK_CONNECT_AUTHENTICATE_TOKEN "$RECON_STATE/secrets.env"; then
  # pyspark's own variable: the Spark Connect server and its clients both read it.
  stok=$(head -c 36 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32)
  echo "export SPARK_CONNECT_AUTHENTICATE_TOKEN='$stok'" >> "$RECON_STATE/secrets.env"
fi
if ! grep -q RECON_PG_DEBEZIUM_PASSWORD "$RECON_STATE/secrets.env"; then
  # Debezium's replication role (scripts/postgres.sh); the Connect worker resolves it from its
  # environment (${env:...}), so no connector config stored in Kafka holds it.
  dpw=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20)
  echo "export RECON_PG_DEBEZIUM_PASSWORD='$dpw'" >> "$RECON_STATE/secrets.env"
fi
# --- the browser for the UI test (Debian's chromium, playwright-core from npm) -----------------
bash "$RECON_ROOT/scripts/browser-deps.sh"
say "setup complete"
