"""The ASGI app the browser tests run under uvicorn (``--factory viewer_app:make_app``): the real
``threadline.server.create_app`` over the store named by ``THREADLINE_VIEWER_DB``, with the demo
app's blocks (``viewer_data.configure``)."""

from __future__ import annotations

import os
from typing import Any

from threadline import connect


def make_app() -> Any:
    """Build the app (uvicorn calls this in the server process)."""
    import viewer_data  # beside this file: uvicorn --app-dir puts this folder on sys.path

    from threadline.server import create_app

    store = connect(os.environ["THREADLINE_VIEWER_DB"])
    return create_app(store, configure=viewer_data.configure)
