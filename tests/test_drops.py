"""The one drop-reason counter every accounting writes through."""

import pytest

from wikigame_spark.drops import Drops


def test_counts_from_rows_mappings_and_additions():
    drops = Drops(["no_titles", "unknown_target", "no_titles"])
    drops.update({"unknown_target": 2})
    drops["self_loop"] = 0  # a reason the stage always reports
    assert drops.as_dict() == {"no_titles": 2, "self_loop": 0, "unknown_target": 3}
    assert list(drops.as_dict()) == ["no_titles", "self_loop", "unknown_target"]
    assert drops.as_dict(zeros=False) == {"no_titles": 2, "unknown_target": 3}
    assert all(type(v) is int for v in Drops({"a": 2**40}).as_dict().values())


def test_declared_order_and_undeclared_reasons():
    drops = Drops({"wrong_type": 1, "malformed_json": 3})
    assert list(drops.as_dict(["malformed_json", "missing_id", "wrong_type"])) == ["malformed_json", "wrong_type"]
    with pytest.raises(ValueError, match=r"\['wrong_type'\] are not among the declared \['malformed_json'\]"):
        drops.as_dict(["malformed_json"])  # never silently left out of a manifest


def test_summary_for_people():
    assert Drops({"wrong_type": 1, "malformed_json": 3, "xpac": 0}).summary() == "malformed_json 3, wrong_type 1"
    assert Drops({"a": 1234, "b": 1234}).summary() == "a 1,234, b 1,234"
    assert Drops().summary() == "none"
