"""``python -m models`` runs the ``dgxtopo`` command line."""

from .cli import main

raise SystemExit(main())
