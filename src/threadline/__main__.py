"""``python -m threadline``: the ``threadline`` command (as ``python -m threadline.cli``)."""

from threadline.cli import main

raise SystemExit(main())
