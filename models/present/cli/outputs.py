"""What every command prints or writes the same way: JSON, the progress bar, pages of figures."""

from __future__ import annotations

import json


def progress_for(args, description: str, unit: str):
    """The progress bar of a command's long work: on stderr when it is a terminal, never with --json."""
    from ..progress import progress_bar, wants_progress

    return progress_bar(description, enabled=wants_progress(json_output=getattr(args, "json", False)),
                        unit=unit)


def print_json(data) -> None:
    """A command's ``--json`` result, indented by two."""
    print(json.dumps(data, indent=2))


# Pages of figures (bound, whatif, plan --out): one self-contained HTML file (models.present.page).
def write_figures(path: str, title: str, figures, lines=()) -> None:
    """Write ``figures`` (plotly) under a title and a few blocks of text, atomically."""
    from ..output import write_text_atomic
    from ..page import figures_page

    write_text_atomic(path, figures_page(title, figures, lines))
