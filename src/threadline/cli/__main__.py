"""``python -m threadline.cli``: the same as the ``threadline`` command."""

from threadline.cli import main

raise SystemExit(main())
