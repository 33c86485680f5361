"""The tests keep their layout (issue 16): no file under ``tests/`` imports a test module
(``test_*``), what files share lives in ``tests/fixtures``, and its pipeline templates render
declarations the product accepts. The unit tier starts no JVM (issue 71): no file under
``tests/unit`` asks for a Spark session or starts a Spark driver (its ``conftest.py`` also fails
a test whose process launches one)."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest
from fixtures import pipelines

from recon.config import parse_pipelines

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module a file imports, at the top or inside a function, by ``import``, ``from``,
    ``importlib.import_module`` or ``__import__`` (a literal name), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            # `from package import test_x` imports the module test_x.
            found += [
                (node.lineno, f"{base}.{alias.name}")
                for alias in node.names
                if alias.name.startswith("test_")
            ]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
                found.append((node.lineno, str(first.value)))
    return found


def imports_of_test_modules(path: Path) -> list[str]:
    """``path:line: module`` for each import of a test module (a ``test_*`` name) in ``path``."""
    return [
        f"{path}:{line}: {module}"
        for line, module in _imported(ast.parse(path.read_text(), str(path)))
        if any(part.startswith("test_") for part in module.split("."))
    ]


def test_no_file_under_tests_imports_a_test_module() -> None:
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in imports_of_test_modules(path)]
    assert found == [], "shared helpers belong in tests/fixtures:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "from test_reconcile import SCENARIOS\n",
        "import test_reconcile as r\n",
        "from unit.test_reconcile import frames\n",
        "from . import test_reconcile\n",
        "def f():\n    from test_engine_vs_workload import PIPELINE_YAML\n",
        "import importlib\nm = importlib.import_module('test_local_verdicts')\n",
        "m = __import__('test_local_verdicts')\n",
    ],
)
def test_every_form_of_importing_a_test_module_is_found(tmp_path: Path, source: str) -> None:
    path = tmp_path / "kit.py"
    path.write_text(source)
    assert len(imports_of_test_modules(path)) == 1


def test_imports_of_helpers_and_fixtures_are_not_flagged(tmp_path: Path) -> None:
    path = tmp_path / "test_x.py"
    path.write_text(
        "import faultkit\nfrom fixtures.scenarios import SCENARIOS\nfrom recon import testing\n"
    )
    assert imports_of_test_modules(path) == []


#: The integration tier's fixtures that start (or stand on) its Spark session.
SPARK_FIXTURES = ("spark", "spark_judged")
#: Calls that start a Spark driver, also in a script a test runs in a process of its own.
DRIVER_STARTS = ("spark_session(", "SparkSession.builder")


def spark_uses(path: Path) -> list[str]:
    """``path:line: what`` for each use of a Spark session in ``path``: a function asking for a
    fixture of :data:`SPARK_FIXTURES` (a test's or a fixture's argument, ``usefixtures`` or
    ``getfixturevalue``), or a text that starts a driver (:data:`DRIVER_STARTS`)."""
    text = path.read_text()
    found: list[str] = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            found += [
                f"{path}:{node.lineno}: {node.name} asks for {a.arg}"
                for a in args
                if a.arg in SPARK_FIXTURES
            ]
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                name in ("usefixtures", "getfixturevalue")
                and isinstance(first, ast.Constant)
                and first.value in SPARK_FIXTURES
            ):
                found.append(f"{path}:{node.lineno}: {name}({first.value!r})")
    for number, line in enumerate(text.splitlines(), 1):
        found += [f"{path}:{number}: starts a driver ({start})" for start in DRIVER_STARTS
                  if start in line]  # fmt: skip
    return found


def test_no_unit_test_asks_for_a_spark_session() -> None:
    found = [
        hit
        for path in sorted((TESTS / "unit").rglob("*.py"))
        if path.name != Path(__file__).name  # this file names them to look for them
        for hit in spark_uses(path)
    ]
    assert found == [], (
        "the unit tier starts no JVM: judge with DuckDB, or move the test to tests/integration "
        "(its conftest has the shared `spark` session):\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "source",
    [
        "def test_x(spark):\n    pass\n",
        "def test_x(tmp_path, *, spark_judged):\n    pass\n",
        "import pytest\n@pytest.fixture\ndef frames(spark):\n    return spark\n",
        "import pytest\npytestmark = pytest.mark.usefixtures('spark')\n",
        "def test_x(request):\n    request.getfixturevalue('spark')\n",
        "from recon.spark import spark_session\ns = spark_session('x', master='local[1]')\n",
        'DRIVER = """\nfrom recon.spark import spark_session\nspark_session("x")\n"""\n',
        "from pyspark.sql import SparkSession\ns = SparkSession.builder.getOrCreate()\n",
    ],
)
def test_every_use_of_a_spark_session_is_found(tmp_path: Path, source: str) -> None:
    path = tmp_path / "test_x.py"
    path.write_text(source)
    assert len(spark_uses(path)) == 1


def test_duckdb_tests_and_other_names_are_not_flagged(tmp_path: Path) -> None:
    path = tmp_path / "test_x.py"
    path.write_text(
        "from recon.spark import spark_settings\n"
        "def test_x(tmp_path, engine, sparkless):\n"
        "    assert spark_settings() and 'spark' in engine\n"
    )
    assert spark_uses(path) == []


def test_a_unit_test_that_launches_a_jvm_fails_at_once() -> None:
    # The guard of tests/unit/conftest.py: py4j's gateway never starts in this tier.
    from pyspark.sql import SparkSession

    with pytest.raises(RuntimeError, match="a unit test started a JVM"):
        SparkSession.builder.master("local[1]").appName("unit-guard").getOrCreate()


TEMPLATES = {
    name: value
    for name, value in vars(pipelines).items()
    if name.isupper() and name.endswith("_PIPELINE")
}
SAMPLE = {
    "name": "fixture_p",
    "engine": "local",
    "semantics": "at_least_once",
    "schedule": "null",
    "topic": "fixture-topic",
    "group": "fixture-group",
    "table": "public.fixture_sink",
    "idempotent": "true",
    "kafka_conn": "kafka_default",
    "tolerances": "{max_duplicate_ratio: 1.0}",
    "retries": "1",
    "time_column": "written_at",
    "max_seconds": "2.0",
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_pipeline_template_renders_an_accepted_declaration(name: str) -> None:
    template = TEMPLATES[name]
    fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
    assert fields <= set(SAMPLE), sorted(fields - set(SAMPLE))
    text = template.format(**SAMPLE)
    if not text.lstrip().startswith("pipelines:"):  # one block of a file
        text = "pipelines:" + text
    (config,) = parse_pipelines(text).values()
    assert (config.name, config.kafka.topic, config.kafka.consumer_group) == (
        "fixture_p",
        "fixture-topic",
        "fixture-group",
    )
    assert config.sink.table == "public.fixture_sink"
    if "engine" in fields:
        assert config.engine == "local"
