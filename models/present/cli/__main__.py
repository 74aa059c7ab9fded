# PYTHON_ARGCOMPLETE_OK (shell completion: the completion extra, see models.present.cli.core)
"""``python -m models.present.cli`` runs the ``dgxtopo`` command line."""

from .core import main

raise SystemExit(main())
