"""The day-chain sensors' interval setting (sensors/pace.py)."""

import pytest

from sensors.pace import INTERVAL_ENV, day_chain_interval_s


def test_the_interval_is_30_s_unless_the_environment_says_otherwise():
    assert day_chain_interval_s({}) == 30
    assert day_chain_interval_s({INTERVAL_ENV: "5"}) == 5


@pytest.mark.parametrize("text", ["abc", "0", "2.5", "-3", ""])
def test_a_bad_interval_names_the_variable_and_what_to_give(text):
    with pytest.raises(ValueError, match=f"{INTERVAL_ENV}=.*whole seconds"):
        day_chain_interval_s({INTERVAL_ENV: text})
