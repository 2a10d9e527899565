"""signals.env_key: the cached key of a point's environment follows the dict it names."""

from lowering.checks.signals import env_key


def test_the_key_is_the_sorted_items_and_follows_changes_in_place():
    env = {"b": 2, "a": 1}
    assert env_key(env) == (("a", 1), ("b", 2))
    env["b"] = 3  # same size, other value: a stale key would name the old point
    assert env_key(env) == (("a", 1), ("b", 3))
    env["c"] = 0
    assert env_key(env) == (("a", 1), ("b", 3), ("c", 0))


def test_equal_environments_in_different_dicts_share_a_key():
    assert env_key({"x": 1, "y": 2}) == env_key({"y": 2, "x": 1})
