"""The storage contract, room by room: what :class:`threadline.store.base.Store` is made of.

``registry`` (sessions), ``tree`` (messages, the tree, search, attachments), ``content``
(overlays, skills, blocks, prompt, entries, state), ``keys`` (HTTP API keys, by hash),
``transfer`` (a whole session dumped and loaded verbatim) and ``values`` (the value types
they take and return); ``rooms`` joins the rooms in one protocol. Protocols and value types
only: nothing here runs a query.
"""
