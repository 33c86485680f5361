"""Spark's extra jars (its Kafka source, the PostgreSQL JDBC driver), for every Spark driver of
the product: the files ``make setup`` fetched into ``$RECON_JARS_SPARK`` when there are any;
else their Maven coordinates, which Spark resolves itself (``spark.jars.packages``, from Maven
Central into an Ivy cache in the state folder) when the driver starts. A checkout has the files;
an installed wheel has neither Maven nor the setup script, and needs only the coordinates.

The coordinates are the ``spark`` profile of ``jvm/pom.xml`` (the checkout's, or the copy a
wheel carries: ``recon.settings.shipped``), read here: one list of artifacts and versions for
both ways.
"""

from __future__ import annotations

import glob
import os
import re
import xml.etree.ElementTree as ElementTree

from recon import settings

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
#: The profile of ``jvm/pom.xml`` that lists Spark's extra jars.
SPARK_PROFILE = "spark"


def pom_path() -> str:
    """``jvm/pom.xml`` of the checkout, or of the installed package."""
    return os.path.join(settings.shipped("jvm"), "pom.xml")


def spark_coordinates(pom: str | None = None) -> list[str]:
    """``group:artifact:version`` of each dependency of the pom's ``spark`` profile, its
    ``${property}`` versions resolved from the pom's properties.

    :raises ValueError: the pom has no such profile, or names a property it does not define.
    """
    root = ElementTree.parse(pom or pom_path()).getroot()
    properties = {
        element.tag.split("}", 1)[1]: (element.text or "").strip()
        for element in root.findall("m:properties/*", _POM_NS)
    }

    def resolve(text: str) -> str:
        def value(match: re.Match[str]) -> str:
            if match.group(1) not in properties:
                raise ValueError(f"{pom or pom_path()}: no property {match.group(1)}")
            return properties[match.group(1)]

        return re.sub(r"\$\{([^}]+)\}", value, text.strip())

    for profile in root.findall("m:profiles/m:profile", _POM_NS):
        if profile.findtext("m:id", namespaces=_POM_NS) != SPARK_PROFILE:
            continue
        return [
            ":".join(
                resolve(dep.findtext(f"m:{part}", "", _POM_NS))
                for part in ("groupId", "artifactId", "version")
            )
            for dep in profile.findall("m:dependencies/m:dependency", _POM_NS)
        ]
    raise ValueError(f"{pom or pom_path()}: no profile '{SPARK_PROFILE}'")


def spark_jar_settings() -> dict[str, str]:
    """The Spark settings that put the extra jars on a driver's classpath: ``spark.jars`` (the
    fetched files), else ``spark.jars.packages`` and its Ivy cache (``ivy`` in the state
    folder, so a cache survives between runs and stays out of the user's home)."""
    jars = sorted(glob.glob(os.path.join(settings.spark_jars_dir(), "*.jar")))
    if jars:
        return {"spark.jars": ",".join(jars)}
    return {
        "spark.jars.packages": ",".join(spark_coordinates()),
        "spark.jars.ivy": os.path.join(settings.state_dir(), "ivy"),
    }
