"""``report``: one self-contained HTML file comparing systems, with figures."""

from __future__ import annotations

from .inputs import check_cluster_options, fabrics_of, size_spec
from .options import MAX_REPORT_GPUS, Command, json_option, max_gpus_option, systems_option, topo_file_options
from .outputs import print_json, progress_for


def _report_arguments(parser) -> None:
    systems_option(parser, default="default: every built-in system")
    parser.add_argument("--out", default="report.html", metavar="FILE",
                        help="HTML file to write, replaced atomically (default: report.html)")
    json_option(parser, "a line: what was written, with its summary")
    topo_file_options(parser, many=True)
    max_gpus_option(parser, default=MAX_REPORT_GPUS)


def _report(args) -> None:
    from ..json_shapes import report_json

    from ..report.write import write_report  # imports plotly: only this command pays for it

    check_cluster_options(args)
    names = list(args.system)
    for name in names:  # sized before anything is built
        size_spec(name, args.max_gpus)
    if args.topo_file:
        from ..output import write_text_atomic
        from ..report.analysis import analyse_report
        from ..report.html import render_report
        fabrics = fabrics_of(args, names)
        with progress_for(args, "report", "step") as progress:
            text = render_report(analyse_report(fabrics, progress=progress))
        path = write_text_atomic(args.out, text)
        written = (path, path.stat().st_size, [G.graph.get("name", "fabric") for G in fabrics])
    else:
        with progress_for(args, "report", "step") as progress:
            result = write_report(args.out, names or None, progress=progress)
        written = (result.path, result.nbytes, list(result.systems))
    path, nbytes, systems = written
    if args.json:
        print_json(report_json(args.out, nbytes, systems))
        return
    print(f"wrote {path} ({nbytes / 1e6:.1f} MB) comparing {', '.join(systems)}")


REPORT = Command("report", "write an offline HTML report comparing systems", _report_arguments, _report)
