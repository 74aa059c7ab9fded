"""``python -m models`` runs the ``dgxtopo`` command line."""

from .present.cli.core import main

raise SystemExit(main())
