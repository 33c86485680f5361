"""Every route checks the caller's Airflow token itself: Airflow does not protect plugin apps.

The token is the one Airflow's own API accepts: ``Authorization: Bearer <jwt>`` (from
``POST /auth/token``), else the ``_token`` cookie the Airflow UI sets at login. It is validated by
Airflow's configured auth manager (``get_user_from_token``: signature, expiry, audience,
revocation), exactly as the core API's ``get_user`` does; an explicit bearer token wins over the
cookie and is never silently replaced by it. Which pipelines a user sees follows the auth
manager's read permission on the pipeline's DAG (``recon_<pipeline>``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import Request

log = logging.getLogger(__name__)

COOKIE_NAME = "_token"  # airflow.api_fastapi.auth.managers.base_auth_manager.COOKIE_NAME_JWT_TOKEN


class NotAuthenticated(Exception):
    """No valid Airflow token. ``explicit``: the caller sent an Authorization header."""

    def __init__(self, reason: str, *, explicit: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.explicit = explicit


def auth_manager() -> Any:
    """The api-server's auth manager (initialised by Airflow before plugins serve requests)."""
    from airflow.api_fastapi.app import get_auth_manager

    return get_auth_manager()


def _presented_token(request: Request) -> tuple[str | None, bool]:
    header = request.headers.get("authorization")
    if header is not None:
        scheme, _, credentials = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            raise NotAuthenticated("only Bearer tokens are accepted", explicit=True)
        return credentials.strip() or None, True
    return request.cookies.get(COOKIE_NAME) or None, False


async def authenticate(request: Request) -> Any:
    """The Airflow user behind the request's token.

    :raises NotAuthenticated: no token, or one the auth manager rejects (bad signature, expired,
        revoked, wrong audience, unknown user shape).
    """
    from jwt import ExpiredSignatureError, InvalidTokenError

    token, explicit = _presented_token(request)
    if not token:
        raise NotAuthenticated("not authenticated: log into Airflow", explicit=explicit)
    try:
        return await auth_manager().get_user_from_token(token)
    except ExpiredSignatureError:
        raise NotAuthenticated("the Airflow token has expired", explicit=explicit) from None
    except InvalidTokenError:
        raise NotAuthenticated("invalid Airflow token", explicit=explicit) from None
    except Exception:  # a malformed token must never become a 500 with a traceback
        log.warning("token check failed", exc_info=True)
        raise NotAuthenticated("invalid Airflow token", explicit=explicit) from None


def login_url(request: Request) -> str:
    """Airflow's login page, coming back to this request's URL afterwards."""
    return str(auth_manager().get_url_login(next_url=str(request.url)))


def dag_id(pipeline: str) -> str:
    return f"recon_{pipeline}"


def repair_dag_id(pipeline: str) -> str:
    """The pipeline's repair DAG (``recon_airflow.factory.repair_dag_id_for``)."""
    return f"recon_repair_{pipeline}"


def readable_pipelines(user: Any, pipelines: Iterable[str]) -> set[str]:
    """The pipelines whose DAG the user may read (``GET`` on ``recon_<pipeline>``)."""
    names = set(pipelines)
    if not names:
        return set()
    allowed = auth_manager().filter_authorized_dag_ids(
        dag_ids={dag_id(p) for p in names}, user=user, method="GET"
    )
    return {p for p in names if dag_id(p) in allowed}


def may_read_all_dags(user: Any) -> bool:
    """Read access to DAGs in general: the Data Docs site lists every pipeline's validations."""
    return bool(auth_manager().is_authorized_dag(method="GET", user=user))
