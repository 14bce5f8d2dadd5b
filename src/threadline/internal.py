"""The small internal API threadline's own transports and adapters build on.

The service (``threadline.server``), the client, the CLI and the framework adapters
(``threadline.integrations``) sit at the edge of the library: they import the public
modules, their own package's private modules, and this module — never another package's
underscore names (``tests/unit/test_structure.py`` walks the imports and holds that line).
Everything here is defined once elsewhere and only named here.

It is not part of the user API: a name may change in a minor release, noted in the
CHANGELOG. A third-party adapter that wants the same footing may use it on those terms.

>>> from threadline import internal
>>> internal.scope_of("user:theme")
'user'
>>> internal.is_sqlite("agent.db")
True
"""

from __future__ import annotations

from threadline._async_calls import owning
from threadline._attachments import ref_sha
from threadline._checks import API_RULES, check_every_public_method
from threadline._openai_http import openai_model
from threadline._ownership import not_found, owned_by, visible_to
from threadline._profile_check import check_document, check_for_tenant
from threadline._search_query import Term, parse_query
from threadline._session_core import store_handle
from threadline._state import INTERNAL_PREFIX, scope_of
from threadline._validate import check_id
from threadline.formats._common import text_in
from threadline.store import _is_sqlite as is_sqlite
from threadline.store import _lazily as lazily
from threadline.store._handle import SessionStore
from threadline.store._sql.rows import datetime_to_us
from threadline.store.postgres._replicas import (
    READ_AFTER,
    WRITTEN,
    format_position,
    on_primary,
    parse_position,
)

__all__ = [
    "API_RULES",
    "INTERNAL_PREFIX",
    "READ_AFTER",
    "WRITTEN",
    "SessionStore",
    "Term",
    "check_document",
    "check_every_public_method",
    "check_for_tenant",
    "check_id",
    "datetime_to_us",
    "format_position",
    "is_sqlite",
    "lazily",
    "not_found",
    "on_primary",
    "openai_model",
    "owned_by",
    "owning",
    "parse_position",
    "parse_query",
    "ref_sha",
    "scope_of",
    "store_handle",
    "text_in",
    "visible_to",
]
