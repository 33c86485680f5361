"""Flows (issue 73, item 2): pipelines declared as hops of one named flow, chained by topic
(a hop's Kafka sink is the next hop's topic); each mistake named by pipeline and key; the hop
where a message went wrong."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from fixtures.declarations import BASE

from recon.config import parse_pipelines
from recon.config.flows import first_bad_hop, flows_of
from recon.errors import ConfigError

pytestmark = pytest.mark.unit


def _hop(topic: str, sink_topic: str | None, flow: str | None = "orders") -> dict[str, Any]:
    body = copy.deepcopy(BASE)
    body["kafka"] = {**body["kafka"], "topic": topic}
    if sink_topic is not None:
        body["sink"] = {"kind": "kafka", "connection": "kafka_default", "topic": sink_topic,
                        "message_id": {"header": "message_id"}}  # fmt: skip
    if flow is not None:
        body["flow"] = flow
    return body


def _load(**hops: dict[str, Any]) -> dict[str, Any]:
    return parse_pipelines(yaml.safe_dump({"pipelines": hops}, sort_keys=False))


def _error(**hops: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(**hops)
    return str(caught.value)


def test_the_hops_are_ordered_by_the_chain_not_the_file() -> None:
    # Declared last hop first: the order comes from the topics.
    loaded = _load(
        to_table=_hop("orders.enriched", None),
        processor=_hop("orders.mirrored", "orders.enriched"),
        mirror=_hop("orders", "orders.mirrored"),
        elsewhere=_hop("payments", None, flow=None),
    )
    flows = flows_of(loaded)
    assert list(flows) == ["orders"]
    assert flows["orders"].hops == ("mirror", "processor", "to_table")
    assert loaded["elsewhere"].flow is None


def test_a_hop_not_chained_is_named() -> None:
    said = _error(a=_hop("orders", "orders.copy"), b=_hop("orders.copy", None),
                  c=_hop("unrelated", None))  # fmt: skip
    assert "pipeline 'a': flow: flow 'orders' needs one first hop" in said
    assert "it has: a, c; each other hop reads the sink.topic of the hop before it" in said


def test_a_branch_is_refused() -> None:
    said = _error(a=_hop("orders", "orders.copy"), b=_hop("orders.copy", None),
                  c=_hop("orders.copy", None))  # fmt: skip
    assert "pipeline 'a': flow: its sink topic is read by b, c: a flow is one chain" in said


def test_a_flow_of_one_hop_is_refused() -> None:
    said = _error(a=_hop("orders", None))
    assert "pipeline 'a': flow: a flow has two hops or more" in said


def test_a_loop_has_no_first_hop() -> None:
    said = _error(a=_hop("x", "y"), b=_hop("y", "x"))
    assert "flow 'orders' needs one first hop (reading a topic no hop writes), it has: none" in said


def test_the_hop_where_a_message_went_wrong() -> None:
    loaded = _load(a=_hop("orders", "orders.copy"), b=_hop("orders.copy", "orders.out"),
                   c=_hop("orders.out", None))  # fmt: skip
    flow = flows_of(loaded)["orders"]
    assert first_bad_hop(flow, {"a": "delivered", "b": "duplicated", "c": "delivered"}) == "b"
    assert first_bad_hop(flow, {"a": "late", "b": "delivered", "c": "lost"}) == "c"
    assert first_bad_hop(flow, {"a": "delivered", "b": "delivered", "c": "delivered"}) is None
    # Not judged by the second hop yet: nothing wrong so far.
    assert first_bad_hop(flow, {"a": "delivered", "c": "lost"}) is None


def test_an_alert_names_the_hop_of_its_flow() -> None:
    from recon.alert.content import flow_line

    flow = {"name": "orders", "hops": ["mirror", "processor", "to_table"], "hop": "processor"}
    assert flow_line(flow) == "Flow orders, hop 2 of 3: processor (mirror -> processor -> to_table)"
    assert flow_line(None) is None
    # A file that no longer loads: the hop is still named.
    assert flow_line({"name": "orders", "hops": [], "hop": "processor"}) == (
        "Flow orders, a hop: processor ()"
    )


def test_a_pipeline_s_flow_is_read_from_the_file_that_declares_it(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.config.load import flow_of

    text = yaml.safe_dump({"pipelines": {"b": _hop("orders.copy", None),
                                         "a": _hop("orders", "orders.copy")}})  # fmt: skip
    path = tmp_path / "pipelines.yaml"
    path.write_text(text)
    monkeypatch.setenv("RECON_PIPELINES", str(path))
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(tmp_path / "none"))
    loaded = parse_pipelines(text)
    assert flow_of(loaded["b"]) == {"name": "orders", "hops": ["a", "b"], "hop": "b"}
    assert flow_of(_load(x=_hop("t", None, flow=None))["x"]) is None
