"""Benchmark of GB200 NVL72 (issue 12): a full 72-GPU analysis, and 8 racks (576 GPUs).

Run: python examples/nvl72_benchmark.py [--repeat N]

Figures (CPU time, ``time.process_time``: on a shared machine it is the steadier figure; the
best of ``--repeat`` runs, each on a freshly built fabric so that no cache is warm):

- the build of one ``gb200nvl72`` rack (72 GPUs, 18 trays, 18 NVLink switch chips), validated;
- a full analysis of the rack: the P2P bandwidth matrix in both modes (``route``, the copy CUDA
  makes; ``maxflow``, the NVLink maximum flow) and an all_reduce sweep over all 72 GPUs at the
  31 sizes of ``nccl-tests -b 8 -e 8G -f 2``. Target: under 0.5 s;
- the build of ``8xgb200nvl72`` (8 racks over an InfiniBand fat tree, 576 GPUs), and a 1 GiB
  all_reduce estimate over its 576 GPUs (target: under 1 s), one rack's 72 GPUs, and one tray
  of each rack. Across racks each rack is one NCCL node with all its trays' NICs; a GPU
  reaches only its own tray's (PXN needs the NIC's own GPU within PXB). Each estimate runs on a freshly built fabric (its build not counted), so no cache is warm.
- the same analysis through the CLI (issue 40 item 7): ``dgxtopo p2p --system gb200nvl72`` in
  both modes (``--mode route``, ``--mode maxflow``) and ``dgxtopo collective all_reduce --system
  gb200nvl72 -b 8 -e 8G -f 2``, each a fresh interpreter as a shell runs it (user + system CPU of
  the child, the best of ``--repeat``). Target: under 0.5 s net of start-up. Printed raw (the
  three processes' whole CPU) and net of three start-ups.

  **Start-up** is what every command of dgxtopo that models a fabric pays before its own work:
  the interpreter, dgxtopo's command line as far as ``--version`` (its parser modules), and the
  two libraries every such command imports, networkx and numpy. ``dgxtopo --version`` alone
  skips networkx and numpy, so it is not the start-up of a graph command; the figure is one
  process doing both (``python -c "import networkx, numpy; <dgxtopo --version>"``). Beside it,
  its parts: a bare interpreter, ``dgxtopo --version``, and ``import networkx, numpy`` net of a
  bare interpreter (the floor no change of dgx-topo can go below). What dgx-topo imports beyond
  the parser (topo, the models a command runs, the text tables) is not start-up: it is counted
  in the net figure, as is the work.

  Twice: as this environment runs Python (from a source tree with ``PYTHONDONTWRITEBYTECODE``
  set, every module of dgx-topo is compiled in every process), and with bytecode cached (in a
  scratch ``PYTHONPYCACHEPREFIX``), as an installed package runs. With ``--skip-cli`` this part
  is left out.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import _bootstrap  # noqa: F401  (examples/_bootstrap.py: the repository importable when not installed)
import topo
from models.predict.collectives import estimate
from topo.errors import DgxTopoError
from models.predict.p2p import p2p_matrix

#: nccl-tests -b 8 -e 8G -f 2: 8 B to 8 GiB, 31 sizes.
SWEEP = tuple(2 ** k for k in range(3, 34))


def cpu(fn):
    """``fn()`` and the CPU time it took. [s]"""
    start = time.process_time()
    result = fn()
    return result, time.process_time() - start


def rack_analysis(G):
    """P2P in both modes and a 31-size all_reduce sweep over every GPU of ``G``."""
    route = p2p_matrix(G, mode="route")
    flow = p2p_matrix(G, mode="maxflow")
    sweep = estimate(G, "all_reduce", SWEEP)
    return route, flow, sweep


def best_of(repeat: int, build, work):
    """Best CPU time of ``work(G)`` over ``repeat`` fresh fabrics, the first (cold: the process's
    first imports of what the models use lazily), and the last result."""
    best_build = best = float("inf")
    result = first = None
    for _ in range(repeat):
        G, built = cpu(build)
        result, spent = cpu(lambda: work(G))
        first = spent if first is None else first
        best_build, best = min(best_build, built), min(best, spent)
    return result, best_build, best, first


#: The CLI commands of the issue-40 speed target: P2P in both modes and the 31-size sweep.
CLI_COMMANDS = (("p2p", "--system", "gb200nvl72", "--mode", "route"),
                ("p2p", "--system", "gb200nvl72", "--mode", "maxflow"),
                ("collective", "all_reduce", "--system", "gb200nvl72", "-b", "8", "-e", "8G", "-f", "2"))


def child_cpu(commands, repeat: int, env=None) -> list:
    """Per command of ``commands``, the smallest user + system CPU time [s] of ``repeat`` runs in a
    child process (its interpreter's start-up and imports included). The commands take turns
    within each round, so that a machine busier at one moment weighs on all of them alike."""
    best = [float("inf")] * len(commands)
    for _ in range(repeat):
        for k, command in enumerate(commands):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            best[k] = min(best[k], (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


#: Start-up, in one process: networkx and numpy imported, then ``dgxtopo --version`` as ``python -m
#: models.present.cli --version`` runs it (runpy; --version exits 0 through SystemExit).
STARTUP_CODE = ("import networkx, numpy, runpy, sys; sys.argv = ['dgxtopo', '--version']; "
                "runpy.run_module('models.present.cli', run_name='__main__', alter_sys=True)")


def cli_figures(repeat: int, env=None, label: str = "") -> None:
    """The CLI's P2P in both modes and all_reduce sweep, raw and net of start-up (module docstring),
    and start-up's parts."""
    dgxtopo = (sys.executable, "-m", "models.present.cli")
    if env is not None:  # one run of each first, which writes the bytecode
        for words in (("--version",), *CLI_COMMANDS):
            subprocess.run((*dgxtopo, *words), check=True, stdout=subprocess.DEVNULL, env=env)
    n = len(CLI_COMMANDS)
    *spent, startup, version, bare, libraries = child_cpu(
        [(*dgxtopo, *words) for words in CLI_COMMANDS] + [(sys.executable, "-c", STARTUP_CODE), (*dgxtopo, "--version"),
                                                          (sys.executable, "-c", "pass"),
                                                          (sys.executable, "-c", "import networkx, numpy")], repeat, env)
    libraries -= bare
    raw = sum(spent)
    print(f"CLI{label}: " + "; ".join(f"{' '.join(words[:1] + words[-2:])} {t:.3f} s"
                                      for words, t in zip(CLI_COMMANDS, spent)) + " cpu")
    print(f"  p2p route + maxflow + 31-size all_reduce sweep: raw {raw:.3f} s cpu; start-up {startup:.3f} s "
          f"a process (interpreter {bare:.3f} s, dgxtopo --version {version:.3f} s, networkx + numpy "
          f"{libraries:.3f} s); net of {n} start-ups {raw - n * startup:.3f} s (target 0.5 s)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the best is shown)")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the CLI figures")
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)
    if not args.skip_cli:
        cli_figures(repeat, label=" (this environment" + (", no bytecode written" if
                                                           os.environ.get("PYTHONDONTWRITEBYTECODE") else "") + ")")
        with tempfile.TemporaryDirectory() as cache:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            cli_figures(repeat, {**env, "PYTHONPYCACHEPREFIX": cache}, " (bytecode cached, as installed)")

    (route, flow, sweep), built, spent, cold = best_of(repeat, lambda: topo.build("gb200nvl72"),
                                                       rack_analysis)
    print(f"gb200nvl72: 72 GPUs; build {built:.3f} s cpu; P2P route + maxflow and a {len(SWEEP)}-size "
          f"all_reduce sweep {spent:.3f} s cpu (target 0.5 s; first run {cold:.3f} s)")
    print(f"  P2P GPU0->GPU71 route {route[0, 71] / 1e9:.1f} GB/s, maxflow {flow[0, 71] / 1e9:.1f} GB/s; "
          f"all_reduce 8 GiB busbw {sweep.busbw[-1] / 1e9:.1f} GB/s ({sweep.algorithm[-1]}/"
          f"{sweep.protocol[-1]})")

    G, built = cpu(lambda: topo.build("8xgb200nvl72"))
    print(f"8xgb200nvl72: {len(topo.gpus(G))} GPUs; build {built:.3f} s cpu")
    for gpus, what in ((None, "all 576 GPUs (target 1 s)"), ("0-71", "one rack's 72 GPUs"),
                       ("0-3,72-75,144-147,216-219,288-291,360-363,432-435,504-507",
                        "tray 0 of each rack (8 nodes over InfiniBand)")):
        fresh = topo.build("8xgb200nvl72")  # no cache warm from the previous estimate
        try:
            e, spent = cpu(lambda: estimate(fresh, "all_reduce", [2 ** 30], gpus))
        except DgxTopoError as error:
            print(f"  1 GiB all_reduce on {what}: not modelled: {error}")
            continue
        print(f"  1 GiB all_reduce on {what}: estimate {spent:.3f} s cpu; busbw "
              f"{e.busbw[0] / 1e9:.1f} GB/s ({e.algorithm[0]}/{e.protocol[0]})")


if __name__ == "__main__":
    main()
