"""The system-spec grammar: one strict parser, typed errors, size checked before building."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import topo
from topo import SystemSpec, SystemSpecError, UnknownSystemError, parse_system_spec
from topo.registry import VARIANTS


@pytest.mark.parametrize("text, expected", [
    ("dgx1v", SystemSpec("dgx1v")),
    ("DGX-1V", SystemSpec("dgx1v")),
    ("dgx_2", SystemSpec("dgx2")),
    ("2xdgx1v", SystemSpec("dgx1v", 2, "fat_tree")),
    ("1xdgx2", SystemSpec("dgx2", 1, "fat_tree")),
    ("16xDGX-2:rail", SystemSpec("dgx2", 16, "rail")),
    ("4xdgx1:fat_tree", SystemSpec("dgx1", 4, "fat_tree")),
    ("4xdgx1:fattree", SystemSpec("dgx1", 4, "fat_tree")),
    ("4096xdgx2", SystemSpec("dgx2", 4096, "fat_tree")),
    ("4xdgxh100:rail", SystemSpec("dgxh100", 4, "rail")),
    ("4xdgxh100:Rail_Only", SystemSpec("dgxh100", 4, "rail_only")),
    ("4xdgxh100:rail-only", SystemSpec("dgxh100", 4, "rail_only")),
    ("16xdgx2:fat_tree:oversub=4", SystemSpec("dgx2", 16, "fat_tree", 4)),
    ("16xdgx2:oversub=4", SystemSpec("dgx2", 16, "fat_tree", 4)),
    ("16xdgx2:rail:OVERSUB=64", SystemSpec("dgx2", 16, "rail", 64)),
    ("16xdgx2:rail:oversub=1", SystemSpec("dgx2", 16, "rail")),
])
def test_accepted_specs(text, expected):
    assert parse_system_spec(text) == expected


def test_canonical_text_round_trips():
    for text in ("dgx2", "2xdgx1v", "16xdgx2:rail", "1xdgx1", "4xdgxh100:rail_only", "16xdgx2:oversub=4",
                 "16xdgx2:rail_only:oversub=3"):
        assert str(parse_system_spec(text)) == text
        assert parse_system_spec(str(parse_system_spec(text))) == parse_system_spec(text)


@pytest.mark.parametrize("text, error, message", [
    ("-1xdgx2", SystemSpecError, r"host count '-1' is not a whole number >= 1"),
    ("1-6xdgx2", SystemSpecError, r"host count '1-6'"),
    ("0xdgx2", SystemSpecError, r"host count '0'"),
    ("00xdgx2", SystemSpecError, r"host count '00'"),
    ("1.5xdgx2", SystemSpecError, r"host count '1.5'"),
    ("1e3xdgx2", SystemSpecError, r"host count '1e3'"),
    ("+2xdgx2", SystemSpecError, r"host count '\+2'"),
    ("xdgx2", SystemSpecError, r"host count ''"),
    ("\u0662xdgx2", SystemSpecError, "host count"),     # Arabic-Indic digit two
    ("4097xdgx2", SystemSpecError, r"4097 hosts, beyond the limit of 4096.*max_hosts=.*--max-gpus"),
    ("1000000xdgx2", SystemSpecError, r"beyond the limit"),
    ("9" * 5000 + "xdgx2", SystemSpecError, r"\(5000 digits\) hosts, beyond the limit"),
    ("2xdgx2:mesh", SystemSpecError, r"unknown network 'mesh'.*expected one of fat_tree, rail, rail_only"),
    ("2xdgx2:", SystemSpecError, r"unknown network ''"),
    ("dgx2:rail", SystemSpecError, r"network or option \(:rail\) needs a host count"),
    ("dgx2:oversub=2", SystemSpecError, r"needs a host count"),
    ("2xdgx2::oversub=2", SystemSpecError, r"unknown network ''"),
    ("2xdgx2:rail:", SystemSpecError, r"unknown option ''"),
    ("2xdgx2:rail:rail", SystemSpecError, r"unknown option 'rail'.*expected oversub=K"),
    ("2xdgx2:rail:radix=8", SystemSpecError, r"unknown option 'radix=8'"),
    ("2xdgx2:oversub", SystemSpecError, r"unknown network 'oversub'"),
    ("2xdgx2:oversub=0", SystemSpecError, r"oversub='0' is not a whole number from 1 to 64"),
    ("2xdgx2:oversub=65", SystemSpecError, r"oversub='65'"),
    ("2xdgx2:oversub=+4", SystemSpecError, r"oversub='\+4'"),
    ("2xdgx2:oversub=1.5", SystemSpecError, r"oversub='1.5'"),
    ("2xdgx2:oversub=" + "9" * 40, SystemSpecError, r"is not a whole number from 1 to 64"),
    ("2xdgx2:oversub=2:oversub=2", SystemSpecError, r"option oversub is given twice"),
    ("2xdgx2:rail:oversub=2:fat_tree", SystemSpecError, r"unknown option 'fat_tree'"),
    ("", SystemSpecError, r"empty system spec: expected NAME or NxNAME"),
    (" dgx2", SystemSpecError, r"whitespace"),
    ("2x dgx2", SystemSpecError, r"whitespace"),
    ("dgx2\n", SystemSpecError, r"whitespace"),
    ("dgx3", UnknownSystemError, r"unknown system 'dgx3': expected one of dgx1, dgx1v, dgx2"),
    ("2xdgx9", UnknownSystemError, r"unknown system '2xdgx9': 'dgx9' is not one of"),
    ("2x", UnknownSystemError, r"unknown system '2x'"),
    (None, SystemSpecError, r"must be a string, received NoneType"),
    (2, SystemSpecError, r"must be a string, received int"),
], ids=lambda value: repr(value)[:20] if isinstance(value, str) else None)
def test_refused_specs(text, error, message):
    with pytest.raises(error, match=message):
        parse_system_spec(text)
    with pytest.raises(error, match=message):
        topo.build(text)


def test_max_hosts_raises_and_lowers_the_limit():
    assert parse_system_spec("5000xdgx2", max_hosts=5000).hosts == 5000
    with pytest.raises(SystemSpecError, match="beyond the limit of 2"):
        topo.build("3xdgx1v", max_hosts=2)
    with pytest.raises(SystemSpecError, match="beyond the limit of 2"):
        topo.cluster("dgx1v", 3, max_hosts=2)
    with pytest.raises(SystemSpecError, match="max_hosts must be a whole number"):
        topo.build("2xdgx1v", max_hosts=0)
    assert topo.build("2xdgx1v", max_hosts=2).graph["hosts"] == 2


def test_build_accepts_a_parsed_spec():
    spec = parse_system_spec("2xdgx1v:rail")
    assert topo.build(spec).graph["system"] == "2xdgx1v:rail"


def test_cluster_by_name_builder_or_graph():
    by_name = topo.cluster("dgx1v", 2)
    by_builder = topo.cluster(topo.dgx1v, 2)
    template = topo.dgx1v()
    before = sorted(template.edges(data=True))
    by_graph = topo.cluster(template, 2)
    assert sorted(template.edges(data=True)) == before, "the template is not modified"
    assert sorted(by_name.edges) == sorted(by_builder.edges) == sorted(by_graph.edges)
    with pytest.raises(topo.DgxTopoError, match="copies a single system"):
        topo.cluster("2xdgx1v", 2)


@pytest.mark.parametrize("n", [True, -1, 0, 1.0, "2", None, 10**30])
def test_cluster_host_counts(n):
    with pytest.raises(SystemSpecError):
        topo.cluster("dgx1v", n)


# 150 examples: the known valid and invalid specs are tabled above (test_accepted_specs,
# test_refused_specs); generating from the regex costs most of this test's time.
@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=30),
                 st.from_regex(r"[-+0-9.x]{0,6}x?(dgx1|dgx1v|dgx2|DGX-2|dgx9)(:[a-z_]{0,9})?"
                               r"(:(oversub|rail|x)?=?[-+0-9.]{0,3}){0,2}", fullmatch=True)))
@example("DGXA10080G")  # found by this test: a variant's name, spelt without its separators
def test_fuzzed_specs_parse_or_raise_a_typed_error(text):
    try:
        spec = parse_system_spec(text)
    except topo.DgxTopoError:
        return
    # A variant (dgxa100-80g, whose name the text st.text() can spell) is a system too.
    assert (spec.system in topo.SYSTEMS or spec.system in VARIANTS) and 1 <= spec.hosts <= topo.MAX_HOSTS
    assert str(spec).lower() == str(spec) and parse_system_spec(str(spec)) == spec
    assert 1 <= spec.oversub <= 64


def test_no_cycle_between_builders_and_registry():
    """topo.dgx and topo.cluster import neither the registry nor each other."""
    import ast
    from pathlib import Path

    for name in ("dgx", "cluster"):
        tree = ast.parse((Path(topo.__file__).parent / f"{name}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not imported & {"registry", "dgx", "cluster"} - {name}, (name, imported)


def test_a_multi_host_system_counts_its_hosts_against_the_limit():
    """An NVL72 rack is 18 hosts: 227 racks (4,086 hosts) fit the 4,096 limit, 228 do not."""
    from topo.registry import HOSTS_PER_SYSTEM
    from topo.dgx_nvswitch import gb200nvl72, gb300nvl72

    assert HOSTS_PER_SYSTEM == {name: len({h for _, h in build().nodes(data="host")} - {-1})
                                for name, build in (("gb200nvl72", gb200nvl72), ("gb300nvl72", gb300nvl72))}
    spec = SystemSpec("gb200nvl72", 228, "fat_tree")
    assert parse_system_spec("227xgb200nvl72").hosts == 227
    with pytest.raises(SystemSpecError, match=r"228 x 18 = 4104 hosts, beyond the limit of 4096"):
        parse_system_spec("228xgb200nvl72")
    with pytest.raises(SystemSpecError, match="beyond the limit"):
        parse_system_spec(spec)
    G = topo.build("2xgb200nvl72:rail")
    assert G.graph["hosts"] == 36 and G.graph["system"] == "2xgb200nvl72:rail"


@pytest.mark.parametrize("spec, message", [
    (SystemSpec("dgx9", 2, "fat_tree"), "unknown system 'dgx9'"),
    (SystemSpec("dgx2", 2, "torus"), "unknown network 'torus'"),
    (SystemSpec("dgx2", 2, "rail", 0), "oversub must be a whole number"),
    (SystemSpec("dgx2", 0, "rail"), "whole number of hosts"),
])
def test_a_parsed_spec_is_checked_too(spec, message):
    with pytest.raises(topo.DgxTopoError, match=message):
        topo.build(spec)

