"""``python -m models`` runs the ``dgxtopo`` command line."""

from .present.cli import main

raise SystemExit(main())
