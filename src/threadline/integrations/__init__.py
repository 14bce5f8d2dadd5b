"""Drop-in backends for agent frameworks, each an optional extra imported only when used:

- ``threadline.integrations.openai_agents``: ``ThreadlineSession`` for the OpenAI Agents SDK
  (``pip install 'threadline[openai-agents]'``);
- ``threadline.integrations.adk``: ``ThreadlineSessionService`` and ``ThreadlineMemoryService``
  for Google ADK (``pip install 'threadline[adk]'``).

Importing this package imports no framework.
"""

__all__: list[str] = []
