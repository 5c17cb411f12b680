"""The SDK's predicted start: the sentence and the brief form from its ISO times, its age,
and its JSON with exactly the keys scripts read."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from trainyard.client import PredictedStart
from trainyard.domain.prediction import PredictedStart as DomainPrediction
from trainyard.domain.prediction import describe

NOW = time.mktime((2026, 3, 4, 12, 0, 0, 0, 0, -1))


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def test_it_says_what_the_server_side_says() -> None:
    for p50, p90, why, horizon in ((NOW + 2100, NOW + 16800, "", 86400.0),
                                   (None, None, "", 86400.0), (NOW + 30, None, "", 3600.0),
                                   (None, None, "it asks 16 GPUs; pool gpu has 8", 0.0)):
        sdk = PredictedStart(None if p50 is None else iso(p50),
                             None if p90 is None else iso(p90), iso(NOW - 40), why, horizon)
        domain = DomainPrediction(as_of=NOW - 40, p50=p50, p90=p90, cannot_start=why,
                                  horizon_s=horizon)
        assert sdk.describe(NOW) == describe(domain, NOW)


def test_its_brief_form_and_age() -> None:
    soon = PredictedStart(iso(NOW + 2100), iso(NOW + 16800), iso(NOW - 40))
    assert soon.brief(NOW) == "~35 min"
    assert soon.age_seconds(NOW) == 40.0 and soon.age(NOW) == "as of 40 s ago"
    assert PredictedStart(iso(NOW + 5), None, iso(NOW)).brief(NOW) == "soon"
    assert PredictedStart(None, None, iso(NOW), horizon_seconds=86400).brief(NOW) == "> 24 h"
    assert PredictedStart(None, None, iso(NOW)).brief(NOW) == "later"
    assert PredictedStart(None, None, iso(NOW), "closed").brief(NOW) == "cannot start"


def test_its_json_has_exactly_the_documented_keys() -> None:
    soon = PredictedStart(iso(NOW + 2100), iso(NOW + 16800), iso(NOW - 40), "", 86400.0)
    assert soon.to_dict() == {"p50": iso(NOW + 2100), "p90": iso(NOW + 16800),
                              "as_of": iso(NOW - 40)}
    never = PredictedStart(None, None, iso(NOW), "closed")
    assert never.to_dict() == {"p50": None, "p90": None, "as_of": iso(NOW),
                               "cannot_start": "closed"}
