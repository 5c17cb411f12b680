from __future__ import annotations

from trainyard.domain.position import QueuePlace, ahead_sentence, explained


def test_how_many_are_ahead_in_words() -> None:
    assert ahead_sentence(QueuePlace(1)) == ""
    assert ahead_sentence(QueuePlace(4, 3)) == "3 jobs of higher priority are ahead"
    assert ahead_sentence(QueuePlace(2, 1)) == "1 job of higher priority is ahead"
    assert ahead_sentence(QueuePlace(3, 0)) == "2 jobs submitted earlier are ahead"
    assert ahead_sentence(QueuePlace(6, 2)) == "5 jobs are ahead, 2 of them of higher priority"


def test_only_reasons_about_the_jobs_ahead_say_how_many_are() -> None:
    place = QueuePlace(4, 3)
    assert explained("QUEUE_LIMIT", "queue 'gpu' is at its limit of 4 running jobs", place) \
        == "queue 'gpu' is at its limit of 4 running jobs; 3 jobs of higher priority are ahead."
    assert explained("GLOBAL_CONCURRENCY_LIMIT", "all 4 job slots are in use.", place) == \
        "all 4 job slots are in use; 3 jobs of higher priority are ahead."
    assert explained("POOL_CAPACITY", "waiting for 16 GPUs", place) == "waiting for 16 GPUs"
    assert explained("QUEUE_LIMIT", "full", QueuePlace(1)) == "full"
