"""Record searches that run out of NCCL's step budget, as the search before its memo of explored
states gave them (main at commit fc77501): the channels, NICs, bandwidth, whether the budget ran
out, and every line of the trace (what each attempt found, which depends on where the budget ran
out). tests/models/engine/test_search.py checks that the search still gives exactly these.

Run: python tests/data/make_search_budget_golden.py tests/data/search_budget_golden.json
"""
import json
import sys

import topo
from models.engine.nccl.search import search_channels_in
from models.engine.nccl.system import NcclSystem
from models.present.explain import search_step_text

#: (system, NCCL release, pattern, GPU nodes): sets whose searches run the budget out.
CASES = (
    ("dgx1", "2.27.7", "ring", ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6"]),
    ("dgx1v", "2.27.7", "balanced_tree", ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu6"]),
    ("dgx1v", "2.3.5", "ring", ["gpu0", "gpu1", "gpu5"]),
    ("dgx2", "2.7.8", "balanced_tree", ["gpu0", "gpu3", "gpu7", "gpu9", "gpu14"]),
    ("2xdgx1v", "2.27.7", "ring", ["h0.gpu0", "h0.gpu1", "h0.gpu5", "h1.gpu0", "h1.gpu1", "h1.gpu5"]),
    ("2xdgx1v", "2.7.8", "ring", ["h0.gpu0", "h0.gpu1", "h0.gpu2", "h0.gpu5", "h0.gpu6", "h0.gpu7", "h1.gpu1"]),
    ("2xdgxa100", "2.18.6", "ring", ["h0.gpu3", "h0.gpu5", "h1.gpu6", "h1.gpu7"]),
    ("2xdgxh100", "2.7.8", "balanced_tree", ["h0.gpu0", "h0.gpu4", "h0.gpu7"]),
)


def main(out):
    rows = []
    for system, release, pattern, nodes in CASES:
        r = search_channels_in(NcclSystem(topo.build(system), release), nodes, pattern=pattern)
        rows.append({"system": system, "release": release, "pattern": pattern, "gpus": nodes,
                     "channels": [list(c) for c in r.channels], "nets": [list(n) for n in r.nets],
                     "bw_intra": r.bw_intra, "timed_out": r.timed_out, "trace": [search_step_text(step) for step in r.trace]})
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
