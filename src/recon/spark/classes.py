"""Which class-data-sharing archive of Spark's classes the product's Spark JVMs map
(:func:`java_options`), and where it lives (:func:`archive_path`); ``recon.spark.class_archive``
makes it.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import shutil

from recon import settings

#: JVM logging of the archive off: a mismatch is not an error, and Java would print it to stdout.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def spark_home() -> str | None:
    """Spark's home as pyspark's launcher finds it: ``$SPARK_HOME``, else pyspark's package."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return home
    spec = importlib.util.find_spec("pyspark")
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


def java_binary() -> str | None:
    """The ``java`` that Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    return os.path.realpath(found) if found and os.path.exists(found) else None


def _fingerprint(path: str) -> str:
    info = os.stat(path)
    return f"{path}:{info.st_size}:{int(info.st_mtime)}"


def archive_path() -> str | None:
    """The archive for the installed Spark and Java (it may not exist yet), or None when either
    is missing. Its key covers each Spark jar's size and time and the JVM's files."""
    home, java = spark_home(), java_binary()
    if home is None or java is None:
        return None
    jars = sorted(glob.glob(os.path.join(home, "jars", "*.jar")))
    if not jars:
        return None
    jdk = os.path.dirname(os.path.dirname(java))
    parts = [_fingerprint(java), *map(_fingerprint, jars)]
    parts += [_fingerprint(p) for p in (os.path.join(jdk, "lib", "modules"),) if os.path.exists(p)]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    # A folder per Spark home: two environments of one checkout (Python 3.11 and 3.12) each
    # keep theirs, and a new archive replaces only those of its own Spark home.
    home_key = hashlib.sha256(os.path.realpath(home).encode()).hexdigest()[:8]
    return os.path.join(settings.state_dir(), "spark", f"classes-{home_key}", f"{key}.jsa")


def java_options() -> str:
    """The JVM options that map the archive; empty when it is off or was not made."""
    if not settings.spark_class_archive():
        return ""
    path = archive_path()
    if path is None or not os.path.isfile(path):
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"
