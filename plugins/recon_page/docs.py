"""The Great Expectations Data Docs site, served read-only under ``/recon/docs/``.

The site folder is ``$RECON_DATA_DOCS_DIR``, else ``$RECON_STATE/gx/uncommitted/data_docs/
local_site`` (``RECON_STATE`` defaults to ``<repo>/.state``). A requested path is resolved
(symbolic links included) and served only when it stays inside that folder.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote, urlsplit

SITE_MARKER = "/uncommitted/data_docs/local_site/"


def docs_root() -> Path:
    """The site folder (:func:`recon.settings.data_docs_dir`)."""
    from recon import settings

    return Path(settings.data_docs_dir())


def resolve(relative: str, root: Path | None = None) -> Path | None:
    """The file for ``relative`` inside the site (a folder gives its ``index.html``), or ``None``
    when it does not exist or would leave the site (``..``, absolute paths, links outside)."""
    root = root or docs_root()
    if "\x00" in relative or "\\" in relative:
        return None
    parts = PurePosixPath(relative).parts
    if any(p in ("..", ".") for p in parts) or (parts and parts[0] == "/"):
        return None
    try:
        base = root.resolve(strict=True)
        target = base.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base):
        return None
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def site_relative(validation_url: str | None) -> str | None:
    """The page's path inside the site for a run's ``validation_url`` (a file path, a ``file://``
    URL or an ``http(s)`` URL under any ``.../docs/`` base that the validator stored)."""
    if not validation_url:
        return None
    parts = urlsplit(validation_url)
    path = unquote(parts.path if parts.scheme in ("file", "http", "https") else validation_url)
    if parts.scheme in ("http", "https") and SITE_MARKER not in path:
        marker = "/docs/"
        return path.split(marker, 1)[1] if marker in path else None
    _, found, relative = path.partition(SITE_MARKER)
    return relative if found and relative else None


def docs_href(validation_url: str | None, prefix: str) -> str | None:
    """The link to a run's Data Docs page under this app (``prefix`` is the app's mount path)."""
    relative = site_relative(validation_url)
    if relative is None:
        return None
    return f"{prefix}/docs/{quote(relative)}"
