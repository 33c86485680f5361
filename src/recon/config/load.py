"""Read pipeline files: the YAML itself, the file's shape, and where the files are.

The YAML loader refuses duplicate keys (PyYAML keeps the last one silently). The file is a
mapping with the key ``pipelines`` and, optionally, ``x-...`` keys that hold YAML anchors shared
by several pipelines (``<<: *defaults``), as in docker-compose files. Each entry under
``pipelines`` is checked by :func:`recon.config.explain.check_pipeline`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from recon import settings
from recon.config.explain import check_pipeline
from recon.config.flows import flow_problems, flows_of
from recon.config.model import PipelineConfig
from recon.config.problems import Problems, kind_of
from recon.config.schema import PIPELINE_NAME_RE
from recon.errors import ConfigError

ENV_VAR = settings.RECON_PIPELINES
#: A directory whose ``*.yaml`` files declare more pipelines (a team's own, a test's).
DIR_ENV_VAR = settings.RECON_PIPELINES_DIR
DEFAULT_FILE = settings.DEFAULT_PIPELINES_FILE


def default_pipelines_path() -> str:
    """``$RECON_PIPELINES``, else ``pipelines.yaml`` at the repository root (``$RECON_ROOT``)."""
    return settings.pipelines_file()


def load_pipelines(path: str | os.PathLike[str] | None = None) -> dict[str, PipelineConfig]:
    """Read and validate every pipeline declared in the YAML file.

    :param path: the file; ``None`` means :func:`default_pipelines_path`.
    :returns: pipelines by name, in file order.
    :raises ConfigError: listing every problem found (at most ``MAX_REPORTED_ERRORS`` lines).
    """
    file_path = os.fspath(path) if path is not None else default_pipelines_path()
    try:
        with open(file_path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"{file_path}: cannot read the pipeline file ({exc.strerror})") from None
    return parse_pipelines(text, source=file_path)


@dataclass(frozen=True)
class PipelineFile:
    """One ``*.yaml`` file of the pipelines folder, read on its own: its pipelines, or the
    problems that keep them all from running.

    :param path: the file.
    :param pipelines: its pipelines by name, in file order (empty when it has an error).
    :param error: its problems, each naming the file and the key; ``None`` when it is valid.
    """

    path: str
    pipelines: dict[str, PipelineConfig] = field(default_factory=dict)
    error: ConfigError | None = None


def pipeline_files(directory: str | os.PathLike[str] | None = None) -> list[PipelineFile]:
    """Every ``*.yaml`` file of a directory (sorted by name), each read and validated alone
    (:func:`load_pipelines`): a file's problems are its own, the other files keep theirs. An
    unset variable or an absent directory declares nothing.

    :param directory: the directory; ``None`` means ``$RECON_PIPELINES_DIR``.
    """
    folder = os.fspath(directory) if directory is not None else settings.pipelines_dir()
    if not folder or not os.path.isdir(folder):
        return []
    found: list[PipelineFile] = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if not entry.endswith(".yaml") or not os.path.isfile(path):
            continue
        try:
            found.append(PipelineFile(path, load_pipelines(path)))
        except ConfigError as exc:
            found.append(PipelineFile(path, error=exc))
    return found


def load_pipeline_dir(
    directory: str | os.PathLike[str] | None = None, *, taken: Mapping[str, str] | None = None
) -> list[tuple[str, PipelineConfig]]:
    """Every pipeline of a directory's ``*.yaml`` files (:func:`pipeline_files`), all of them
    or none: for a caller that must know every declared pipeline (``recon forget``).

    :param directory: the directory; ``None`` means ``$RECON_PIPELINES_DIR``.
    :param taken: pipeline names already declared elsewhere, by the file that declares them.
    :returns: ``(file, pipeline)`` pairs: each pipeline runs with the file it came from.
    :raises ConfigError: a file's own problems, or a name declared twice (naming both files).
    """
    seen = dict(taken or {})
    found: list[tuple[str, PipelineConfig]] = []
    for file in pipeline_files(directory):
        if file.error is not None:
            raise file.error
        for name, cfg in file.pipelines.items():
            if name in seen:
                # Two DAGs with one id would replace each other at every parse.
                raise ConfigError(
                    f"{file.path}: pipeline '{name}' is already declared in {seen[name]}"
                )
            seen[name] = file.path
            found.append((file.path, cfg))
    return found


def declared_in_file(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The pipelines the pipeline file declares, by that file's path; none when there is no
    such file (a deployment may declare every pipeline in the folder).

    :param path: the file; ``None`` means :func:`default_pipelines_path`.
    :raises ConfigError: the file's own problems.
    """
    file_path = os.fspath(path) if path is not None else default_pipelines_path()
    return dict.fromkeys(load_pipelines(file_path), file_path) if os.path.isfile(file_path) else {}


def declared_pipelines(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Every declared pipeline, by the file that declares it: the pipeline file's
    (:func:`declared_in_file`) and the pipelines folder's (:func:`load_pipeline_dir`).

    :raises ConfigError: a file's own problems, or a name declared twice.
    """
    declared = declared_in_file(path)
    declared.update({cfg.name: file for file, cfg in load_pipeline_dir(taken=declared)})
    return declared


def parse_pipelines(text: str, source: str = DEFAULT_FILE) -> dict[str, PipelineConfig]:
    """Validate pipeline declarations given as YAML text.

    :param text: the YAML document.
    :param source: the file name used in error messages.
    :raises ConfigError: listing every problem found.
    """
    document = _read_yaml(text, source)
    problems = Problems(source)
    pipelines: dict[str, PipelineConfig] = {}
    for name, raw in _declared(document, problems).items():
        if not isinstance(name, str) or not PIPELINE_NAME_RE.match(name):
            problems.add(
                None,
                f"pipelines.{name}",
                "a pipeline name must be letters, digits, '_', '.' or '-', not starting with '.' "
                "(it becomes a DAG id and a directory name)",
            )
            continue
        config, found = check_pipeline(name, raw)
        for path, message in found:
            problems.add(name, path, message)
        if config is not None:
            pipelines[name] = config
    if not problems.items:  # a flow is judged over pipelines that loaded
        for pipeline, key, message in flow_problems(pipelines):
            problems.add(pipeline, key, message)
    problems.raise_if_any()
    return pipelines


def _read_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{source}: {where}YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML syntax error: {exc}") from None


def _declared(document: Any, problems: Problems) -> dict[Any, Any]:
    """The mapping under ``pipelines:``; problems with the file's own shape are recorded."""
    if not isinstance(document, dict):
        problems.add(None, "", "expected a mapping with the key 'pipelines'")
        return {}
    for key in document:
        # 'x-' keys hold YAML anchors shared by pipelines, as in docker-compose files.
        if key != "pipelines" and not (isinstance(key, str) and key.startswith("x-")):
            problems.add(None, str(key), "unknown key (expected 'pipelines' or 'x-...')")
    if "pipelines" not in document:
        problems.add(None, "pipelines", "missing required key")
        return {}
    declared = document["pipelines"]
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        problems.add(None, "pipelines", f"expected a mapping of pipelines, got {kind_of(declared)}")
        return {}
    return declared


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys instead of silently keeping the last one."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    # Only keys written out are compared: a key that overrides one merged in with '<<: *anchor'
    # is the point of the merge, not a duplicate.
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable: construct_mapping reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _mapping_without_duplicates,
)


def flow_of(cfg: PipelineConfig) -> dict[str, object] | None:
    """The flow ``cfg`` is a hop of, as an alert names it: ``name``, ``hops`` (in order, read
    from the file that declares it: a flow's hops are declared together) and ``hop``; None when
    it is no hop. A file that does not load any more leaves ``hops`` empty.
    """
    flow = getattr(cfg, "flow", None)  # a stand-in config of a test may have none
    if flow is None:
        return None
    hops: tuple[str, ...] = ()
    try:
        path = declared_pipelines().get(cfg.name)
        if path is not None:
            found = flows_of(load_pipelines(path)).get(flow)
            hops = found.hops if found is not None else ()
    except ConfigError:
        pass
    return {"name": flow, "hops": list(hops), "hop": cfg.name}
