"""The class archive of Spark's classes (recon.spark.class_archive): one per installed Spark and
Java, mapped by every Spark JVM of the product, never in the way when it is missing or stale."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recon.spark import class_archive as spark_class_archive
from recon.spark import classes as spark_classes
from recon.spark import spark_settings

pytestmark = pytest.mark.unit


@pytest.fixture
def fake_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A Spark home with two jars and a Java home, in a state folder of the test's own."""
    spark_home, java_home = tmp_path / "spark", tmp_path / "jdk"
    (spark_home / "jars").mkdir(parents=True)
    for jar in ("a.jar", "b.jar"):
        (spark_home / "jars" / jar).write_bytes(b"jar")
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_text("#!/bin/sh\nexit 1\n")
    (java_home / "lib").mkdir()
    (java_home / "lib" / "modules").write_bytes(b"modules")
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    monkeypatch.setenv("RECON_STATE", str(tmp_path / "state"))
    monkeypatch.delenv("RECON_SPARK_CLASS_ARCHIVE", raising=False)
    return {"spark": spark_home, "java": java_home, "state": tmp_path / "state"}


def test_the_archive_is_named_after_the_installed_spark_and_java(
    fake_install: dict[str, Path],
) -> None:
    first = spark_classes.archive_path()
    assert first is not None
    assert Path(first).parent.parent == fake_install["state"] / "spark"
    assert spark_classes.archive_path() == first
    # A jar replaced by another of the same name (an upgrade), or another JVM build: a new name,
    # so setup makes a new archive instead of leaving every JVM ignoring the old one.
    jar = fake_install["spark"] / "jars" / "b.jar"
    jar.write_bytes(b"a jar of another size")
    second = spark_classes.archive_path()
    assert second not in (None, first)
    modules = fake_install["java"] / "lib" / "modules"
    os.utime(modules, (1, 1))
    assert spark_classes.archive_path() not in (None, first, second)


def test_no_spark_jars_no_archive(fake_install: dict[str, Path]) -> None:
    for jar in (fake_install["spark"] / "jars").iterdir():
        jar.unlink()
    assert spark_classes.archive_path() is None
    assert spark_classes.java_options() == ""


def test_the_jvms_map_the_archive_only_when_it_exists_and_is_not_turned_off(
    fake_install: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECON_SPARK_JAVA_OPTIONS", "-Xshare:off")
    assert spark_classes.java_options() == ""
    assert spark_settings()["spark.driver.extraJavaOptions"] == "-XX:+UseParallelGC -Xshare:off"
    path = Path(str(spark_classes.archive_path()))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    mapped = f"-XX:SharedArchiveFile={path} {spark_classes.QUIET}"
    assert spark_classes.java_options() == mapped
    # Driver and executors alike; the user's own options last, so they can turn it off.
    settings = spark_settings()
    expected = f"-XX:+UseParallelGC {mapped} -Xshare:off"
    assert settings["spark.driver.extraJavaOptions"] == expected
    assert settings["spark.executor.extraJavaOptions"] == expected
    monkeypatch.setenv("RECON_SPARK_CLASS_ARCHIVE", "false")
    assert spark_classes.java_options() == ""


def test_a_failed_recording_leaves_no_archive_and_says_so(
    fake_install: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # The fake Spark home has no launcher: the recording driver cannot start.
    assert spark_class_archive.make_archive(timeout=120) is None
    assert "no class archive of Spark's classes was made" in capsys.readouterr().err
    assert not list(Path(str(spark_classes.archive_path())).parent.iterdir())


def test_an_archive_made_earlier_is_kept(
    fake_install: dict[str, Path],
) -> None:
    path = Path(str(spark_classes.archive_path()))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    # Already made: nothing is recorded again (the fake Spark could not record anything).
    assert spark_class_archive.make_archive() == str(path)
    assert path.read_bytes() == b"archive"
