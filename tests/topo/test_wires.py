"""The wire of each link technology: known answers from its specification, per generation.

Each figure below is computed here from the specification's own numbers (lanes, bit rate, line
code, FEC, header bytes), not read back from the table, and compared with what the
specification or the vendor states.
"""

from __future__ import annotations

import pytest

from topo.specs import LINKS, WIRES

GB = 1e9


@pytest.mark.parametrize("link, lanes, gbps, stated", [
    # InfiniBand Architecture Specification vol. 2: EDR 25.78125 Gb/s per lane with 64b/66b;
    # HDR/NDR/XDR PAM4 lanes with 256b/257b and RS(544,514) (IEEE 802.3bs clause 119 format).
    ("ib_edr", 4, 25.78125 * 64 / 66, 100),
    ("ib_hdr", 4, 53.125 * 256 / 257 * 514 / 544, 200),
    ("ib_ndr", 4, 106.25 * 256 / 257 * 514 / 544, 400),
    ("ib_xdr", 4, 212.5 * 256 / 257 * 514 / 544, 800),
])
def test_infiniband_line_code_and_fec_give_exactly_the_port_speed(link, lanes, gbps, stated):
    # the signalling rate is sized so that what the line code and the FEC leave is the round speed
    assert lanes * gbps == pytest.approx(stated, rel=1e-12)
    assert WIRES[link].data_rate == pytest.approx(stated * GB / 8, rel=1e-12)
    assert LINKS[link].bandwidth == pytest.approx(WIRES[link].data_rate, rel=1e-12)


@pytest.mark.parametrize("link", ["ib_edr", "ib_hdr", "ib_ndr", "ib_xdr"])
def test_infiniband_payload_is_4096_of_4122_bytes_at_every_generation(link):
    # MTU 4096; LRH 8 + BTH 12 + ICRC 4 + VCRC 2 (vol. 1 ch. 5): the same at every speed, derived
    # from each generation's own entry
    assert WIRES[link].packet_efficiency == pytest.approx(4096 / (4096 + 8 + 12 + 4 + 2))
    assert WIRES[link].dma_efficiency == WIRES[link].packet_efficiency  # RDMA writes: no reads


@pytest.mark.parametrize("link, gts, stated_GBps", [
    ("pcie3_x16", 8, 15.75), ("pcie4_x16", 16, 31.51), ("pcie5_x16", 32, 63.02)])
def test_pcie_128b130b_generations(link, gts, stated_GBps):
    w = WIRES[link]
    assert w.data_rate == pytest.approx(16 * gts * 128 / 130 / 8 * GB)
    assert round(w.data_rate / GB, 2) == stated_GBps
    # a 256 B write: STP token 4 (with the sequence number) + 4-DW header 16 + LCRC 4, plus an
    # Ack and an UpdateFC DLLP of 8 B each per 4 TLPs
    assert w.packet_efficiency == pytest.approx(256 / (256 + 4 + 16 + 4 + 16 / 4))
    # both ways: a 24 B read request per 512 B read travels with the writes
    assert w.dma_efficiency == pytest.approx(256 / (256 + 24 + 4 + 24 * 256 / 512))


def test_pcie6_flit_mode():
    w = WIRES["pcie6_x16"]
    assert LINKS["pcie6_x16"].bandwidth == 128 * GB            # 64 GT/s x16, no line code
    assert w.data_rate == pytest.approx(128 * GB * 236 / 256)  # 236 TLP bytes per 256 B flit
    assert w.packet_efficiency == pytest.approx(256 / 272)     # no STP token, LCRC or DLLPs
    assert w.dma_efficiency == pytest.approx(256 / (272 + 16 * 256 / 512))
    # flit mode pays its FEC per flit: below gen 5's share of the raw rate for writes
    assert w.payload_rate / LINKS["pcie6_x16"].bandwidth < WIRES["pcie5_x16"].payload_rate / (16 * 32 * GB / 8)


@pytest.mark.parametrize("link, lanes, gbps", [
    ("nvlink1", 8, 20), ("nvlink2", 8, 25.78125), ("nvlink3", 4, 50), ("nvlink4", 2, 100),
    ("nvlink5", 2, 200)])
def test_nvlink_generations(link, lanes, gbps):
    w = WIRES[link]
    assert w.data_rate == pytest.approx(lanes * gbps * GB / 8)
    assert w.packet_efficiency == pytest.approx(16 / 17)  # 1 header flit per 16 data flits
    # NVLink 2.0 signals above its nominal 25 GB/s (the stated figure is rounded down)
    assert (w.data_rate > LINKS[link].bandwidth) == (link == "nvlink2")


def test_every_wire_is_a_catalogued_link_with_sources():
    for link, w in WIRES.items():
        assert w.link == link and link in LINKS and w.source
        assert 0 < w.packet_efficiency < 1 and 0 < w.dma_efficiency <= w.packet_efficiency
