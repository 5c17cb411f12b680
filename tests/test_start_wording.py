"""The words of a predicted start, shared by the server and the client side."""

import pytest

from trainyard.start_wording import about, ago


@pytest.mark.parametrize(("seconds", "said"), [
    (0, "under a minute"), (59, "under a minute"), (60, "about 1 min"),
    (35 * 60 + 20, "about 35 min"), (89 * 60, "about 89 min"), (2 * 3600, "about 2 h"),
    (5400, "about 1.5 h"), (35 * 3600, "about 35 h"), (3 * 86400, "about 3 d"),
])
def test_a_wait_as_people_round_it(seconds: float, said: str) -> None:
    assert about(seconds) == said


@pytest.mark.parametrize(("seconds", "said"), [
    (0.2, "just now"), (40.7, "40 s ago"), (60, "1 min ago"), (3599, "59 min ago"),
    (7300, "2 h ago"), (3 * 86400 + 5, "3 d ago"),
])
def test_an_age(seconds: float, said: str) -> None:
    assert ago(seconds) == said
