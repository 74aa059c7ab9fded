"""Record the channel search and estimate outputs of the search before its rewrite (commit db8d5d3).

Run: python tests/data/make_search_golden.py tests/data/search_golden.json
"""
import itertools, json, random, sys, time
import topo
from models.engine.nccl.search import search_channels_in
from models.engine.nccl.system import NcclSystem
from models.predict.collectives import estimate

def rec(system, G, sets, tree=True):
    fab = NcclSystem(G)
    gpus = topo.gpus(G)
    out = {}
    for s in sets:
        nodes = [gpus[i] for i in s]
        r = search_channels_in(fab, nodes)
        row = [r.nchannels, r.bw_intra, r.type_intra.name]
        if tree and r.nnodes == 1:
            t = search_channels_in(fab, nodes, pattern="balanced_tree", min_channels=r.nchannels, max_channels=r.nchannels)
            row += [t.nchannels, t.bw_intra, t.type_intra.name]
        out[",".join(map(str, s))] = row
    return out

def main():
    t0 = time.time()
    data = {}
    for name in ("dgx1v", "dgx1"):
        G = topo.build(name)
        sets = [c for k in range(1, 9) for c in itertools.combinations(range(8), k)]
        data[name] = rec(name, G, sets)
    rng = random.Random(1)
    G = topo.build("dgx2")
    sets = sorted({tuple(sorted(rng.sample(range(16), rng.randint(1, 16)))) for _ in range(60)})
    data["dgx2"] = rec("dgx2", G, sets)
    G = topo.build("2xdgx1v")
    sets = set()
    for local in [c for k in range(1, 9) for c in itertools.combinations(range(8), k)][::7]:
        sets.add(tuple(list(local) + [8 + g for g in local]))
    for _ in range(25):
        a = sorted(rng.sample(range(8), rng.randint(1, 8))); b = sorted(rng.sample(range(8), rng.randint(1, 8)))
        sets.add(tuple(a + [8 + g for g in b]))
    data["2xdgx1v"] = rec("2xdgx1v", G, sorted(sets))
    G = topo.build("2xdgx2")
    sets = set()
    for _ in range(12):
        a = sorted(rng.sample(range(16), rng.randint(1, 16))); b = sorted(rng.sample(range(16), rng.randint(1, 16)))
        sets.add(tuple(a + [16 + g for g in b]))
    sets.add(tuple(range(32)))
    data["2xdgx2"] = rec("2xdgx2", G, sorted(sets))
    print("search", time.time() - t0, file=sys.stderr)
    est = []
    sizes = [8, 65536, 2**22, 2**28, 2**32]
    for name, gsets in [("dgx1v", [None, [0, 1], [0, 5], [0, 1, 2], [0, 1, 4, 5], [2]]), ("dgx1", [None, [0, 3, 5]]),
                        ("dgx2", [None, [0, 8], [1, 2, 3]]), ("2xdgx1v", [None, [0, 8], [0,1,2,9]]), ("2xdgx2", [None])]:
        G = topo.build(name)
        for gs in gsets:
            for coll in ("all_reduce", "all_gather", "broadcast", "alltoall", "sendrecv"):
                e = estimate(G, coll, sizes, gs)
                import numpy as np
                est.append({"system": name, "gpus": gs, "collective": coll,
                            "algorithm": [str(a) for a in np.broadcast_to(e.algorithm, (len(sizes),))],
                            "protocol": [str(a) for a in np.broadcast_to(e.protocol, (len(sizes),))],
                            "nchannels": [int(a) for a in np.broadcast_to(e.nchannels, (len(sizes),))],
                            "busbw": [float(a) for a in np.broadcast_to(e.busbw, (len(sizes),))]})
    data["estimates"] = {"sizes": sizes, "cases": est}
    print("total", time.time() - t0, file=sys.stderr)
    json.dump(data, open(sys.argv[1], "w"), separators=(",", ":"))


if __name__ == "__main__":
    main()
