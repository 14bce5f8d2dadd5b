"""Importing this module registers threadline's URI schemes in ADK's service registry.

It is the one line of an agents directory's ``services.py`` (ADK imports that file before it
builds its services), so ``adk web`` and ``adk api_server`` take threadline URIs::

    # my_agents/services.py
    import threadline.integrations.adk_services

    $ adk web --session_service_uri threadline:///adk.db \\
        --memory_service_uri threadline:///adk.db \\
        --artifact_service_uri threadline:///adk.db my_agents

It calls :func:`threadline.integrations.adk.register_services` with ADK's own registry.

>>> from google.adk.cli.service_registry import get_service_registry
>>> import threadline.integrations.adk_services
>>> get_service_registry().create_memory_service("threadline://").store
LazyStore(':memory:', not opened)
"""

from __future__ import annotations

from threadline.integrations.adk import register_services

__all__: list[str] = []

register_services()
