"""Export and import (JSON Lines, the CLI's format): ``GET /v1/export``, ``POST /v1/import``."""

from __future__ import annotations

from threadline.server._deps import router

routes = router()
