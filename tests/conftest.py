"""Shared fixtures: the built-in systems and the project's own copies of real-hardware data."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

import topo
from topo.collector import collector_paused

DATA = Path(__file__).parent / "data"

# Hypothesis' defaults for the properties that set none of their own (an explicit @settings wins
# per argument): no deadline, since a shared or loaded machine makes an example's time
# meaningless (a slow example is not a failure; the fuzz suites' watchdog catches hangs), and
# hypothesis' own 100 examples (the properties without a max_examples are arithmetic, each
# example microseconds). Properties whose examples are costly set a smaller max_examples, and
# their module says why it is enough. HYPOTHESIS_PROFILE=NAME loads another registered profile.
settings.register_profile("ci", deadline=None, max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser, pluginmanager):
    """pyproject.toml's addopts name pytest-xdist's options (long forms); without the plugin
    (``-p no:xdist`` to debug in one process) they are accepted and ignored."""
    if pluginmanager.has_plugin("xdist"):
        return
    # addopts load xdist (-p xdist) before a command line's -p no:xdist unloads it, so its options
    # may be there already, in its own group: that group refuses a name twice (ValueError).
    group = parser.getgroup("xdist")
    for names, attributes in ((("--numprocesses",), {"dest": "numprocesses", "default": None}),
                              (("--dist",), {"dest": "dist", "default": "no"}),
                              (("--no-loadscope-reorder",), {"dest": "loadscopereorder", "action": "store_false"})):
        try:
            group.addoption(*names, help="ignored: pytest-xdist is not loaded", **attributes)
        except ValueError:
            pass


def read_data(name: str) -> str:
    """A file of tests/data without its '#' comment lines (which name the source)."""
    lines = (DATA / name).read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("#"))


def _bytecode_outside_the_tree():
    """Where the environment says not to write bytecode (PYTHONDONTWRITEBYTECODE, as on this
    project's machines), the suite writes it under the temporary directory instead
    (``sys.pycache_prefix``, PYTHONPYCACHEPREFIX for the xdist workers and the commands the tests
    start), never beside the sources: each worker compiled every module it imports and pytest
    rewrote every test module on each run (collection on one process, measured: 6.5 s of CPU
    without bytecode, 2.9 s with the prefix's bytecode of an earlier run). A prefix already set
    is kept; bytecode is checked against its source's time and size, as in ``__pycache__``."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return
    user = getattr(os, "getuid", lambda: "user")()
    prefix = Path(tempfile.gettempdir()) / f"dgx-topo-pycache-{user}"
    try:  # the suite's own directory, private to this user (one already there must be this user's)
        prefix.mkdir(mode=0o700, exist_ok=True)
        held = prefix.lstat()
    except OSError:
        return
    if not prefix.is_dir() or prefix.is_symlink() or (hasattr(os, "getuid") and held.st_uid != os.getuid()):
        return  # someone else's: no bytecode rather than bytecode another user could have planted
    if held.st_mode & 0o077:
        prefix.chmod(0o700)
    prefix = str(prefix)
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


# One memo of NCCL channel searches for the whole test session (each xdist worker has its own). The
# library keeps none of its own (tests/test_module_state.py): a prepared fabric owns its memo
# (models.engine.nccl.system.NcclSystem.searches), and fabrics may share one, since it is keyed by
# the problem's content under local names and by the NCCL profile's identity (the profiles are the
# constants of models.engine.nccl.profiles): an entry is the answer of every fabric whose problem
# has that content, whichever test asked it first. The suite asks 10,650 searches of 1,254
# distinct problems (a profile on one process, main of 2026-12-07): sharing spares the repeats across tests, which each
# prepared its own fabrics. A fabric given a memo of its own (``searches=``) keeps it; a test that
# counts what is searched, or the memo's entries, is marked ``own_searches`` and runs with an empty
# memo of its own, so that nothing asked before it is found.
SHARED_SEARCHES = 4096


def pytest_configure(config):
    _bytecode_outside_the_tree()
    config.addinivalue_line("markers", "own_searches: the test's fabrics start from an empty channel-search "
                                       "memo (tests/conftest.py, _session_searches)")


@pytest.fixture(scope="session", autouse=True)
def _session_searches():
    """The session's memo, put in as NcclSystem's default (a holder, so that a test marked
    ``own_searches`` can swap in its own)."""
    from models.engine.memo import BoundedMemo
    from models.engine.nccl.system import NcclSystem

    holder = [BoundedMemo(SHARED_SEARCHES)]
    original = NcclSystem.__init__

    @functools.wraps(original)
    def init(self, G, profile=None, *, searches=None, **options):
        original(self, G, profile, searches=holder[0] if searches is None else searches, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(NcclSystem, "__init__", init)
        yield holder


@pytest.fixture(autouse=True)
def _own_searches(request, _session_searches):
    """An empty memo for a test marked ``own_searches``; the session's otherwise."""
    if request.node.get_closest_marker("own_searches") is None:
        yield
        return
    from models.engine.memo import BoundedMemo

    shared = _session_searches[0]
    _session_searches[0] = BoundedMemo(SHARED_SEARCHES)
    try:
        yield
    finally:
        _session_searches[0] = shared


@pytest.fixture(params=sorted(topo.SYSTEMS))
def system(request):
    """Name of each built-in system in turn."""
    return request.param


@pytest.fixture
def fabric(system):
    """A fresh graph of each built-in system in turn."""
    return topo.build(system)


# Under pytest-xdist (--dist loadgroup, pyproject.toml) each test goes to whichever worker is free,
# except that a file with a module-scoped fixture (a prepared fabric; the full report of
# tests/models/present/test_report.py) or a cache of its own (functools.cache, lru_cache: the parsed
# sources of tests/test_layering.py) runs whole on one worker, so that it is computed once. Tests go
# out in collection order (--no-loadscope-reorder), which starts with the slowest files, then the
# other files that run whole, then the single tests: the big pieces first, so that the run does not
# end waiting for one worker to finish a file it picked up last.
SLOW_FIRST = ("tests/models/present/test_report.py", "tests/test_types.py")  # the second: its mypy run, under -m slow
_COMPUTED_ONCE = re.compile(r"""@pytest\.fixture\(\s*scope\s*=\s*["']module["']|\bfunctools\.(?:lru_)?cache\b"""
                            r"|^from functools import .*\b(?:lru_)?cache\b", re.MULTILINE)


def files_run_whole(root: Path) -> set:
    """The test files (paths relative to ``root``, as in node ids) with a module-scoped fixture or a
    cache of their own."""
    return {path.relative_to(root).as_posix() for path in Path(__file__).parent.rglob("test_*.py")
            if _COMPUTED_ONCE.search(path.read_text(encoding="utf-8"))}


def pytest_collection_modifyitems(config, items):
    whole = files_run_whole(Path(str(config.rootpath)))

    def order(item):
        path = item.nodeid.split("::")[0]
        return 0 if path in SLOW_FIRST else 1 if path in whole else 2
    items.sort(key=order)  # stable: the order within each file is kept


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Collection runs with the cyclic collector off: importing the test modules builds their
    assert-rewritten syntax trees and code (~150 modules, a few seconds of each worker's start),
    whose garbage reference counting frees, and the collections it triggered on the way found
    next to nothing to free (measured with --collect-only -n 0, no bytecode: 2,156 collections,
    1.6 s of the ~5.7 s, 37,050 objects freed). What collection leaves is collected once at its end
    (:func:`pytest_collection_finish`); the xdist controller, which collects nothing, passes
    through. A collector that was off before (a caller of pytest.main) stays off."""
    with collector_paused():
        return (yield)


def pytest_collection_finish(session):
    """The cyclic collector's costs of a test run, cut where they free nothing:

    - What collection leaves alive (modules, functions, test items: ~100,000 objects a worker
      keeps to the end) is moved to the collector's permanent generation (``gc.freeze``): every
      full collection of the run traversed it again. Collection's own garbage is collected first;
      a frozen object is still freed by reference counting (only a cycle among frozen objects
      would outlive its use: modules and test items live to the end).
    - Collections are rarer (``gc.set_threshold``: a young one every 2,000 net allocations, not
      700; a middle one every 20 young ones and a full one every 200 middle ones, not 10 and
      10): the tests build and drop large acyclic structures (graphs, searches, syntax trees)
      that reference counting frees, and each collection of them freed little; the few full
      collections that remain were each a traversal of every object a worker holds and has not
      frozen.

    Measured on tests/models/engine in one process: the collector's time 3.2 s (defaults) -> 2.6 s
    (frozen) -> 1.4 s (frozen, and 2,000 / 10 / 50); tests/models/engine and tests/models/predict,
    frozen only: 5.5 s -> 3.9 s. The whole suite on two workers, 2,000 / 10 / 50 -> 2,000 / 20 /
    200 (gc.callbacks): the collector's time per worker 3.5-4.5 s -> 2.4-2.9 s, its full
    collections 4-5 -> 1; the largest process's memory 385 -> 428 MB."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(2000, 20, 200)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent without it
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup: xdist's own groups by ``xdist_group`` marks, which pytest-xdist 3.8 cannot
    read under pytest 9 (it renames a node id pytest no longer keeps there); here the groups are the
    files of :func:`files_run_whole`, found in their text by the controller, which collects nothing."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    whole = files_run_whole(Path(str(config.rootpath)))

    class FilesRunWhole(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path in whole else nodeid

    return FilesRunWhole(config, log)


class Hang(Exception):
    """A call under :func:`watchdog` gave no answer in time."""


@contextlib.contextmanager
def watchdog(seconds: int):
    """Raise :class:`Hang` in the block after ``seconds`` (the fuzz suites' guard against hangs)."""
    def alarm(*_):
        raise Hang(f"no answer within {seconds} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
