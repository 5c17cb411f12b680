"""The prediction benchmark's pure parts: the queue it predicts from shows nothing of any
job's future, and its figures are computed as its text says."""

from __future__ import annotations

from dataclasses import replace

from predict import Sample, accuracy, observed_queue

from trainyard.sim.cluster import generated_policy, submit
from trainyard.sim.forecast import Scheduling, forecast
from trainyard.sim.policies import replay_for
from trainyard.sim.trace import generate_trace


def predictions_at(jobs: list, policy: object, at: float) -> tuple[dict, set[str]]:
    """The forecast from the queue as observed at the first event at or after `at`, and the
    jobs finished by then."""
    submitted = submit(jobs, policy)  # type: ignore[arg-type]
    by_id = {job.job_id: job for job in submitted.jobs}
    teams = sorted({job.team for job in submitted.jobs})
    replay = replay_for("default", policy, 0, teams)  # type: ignore[arg-type]
    seen: dict[str, object] = {}

    def look(now: float) -> None:
        if now >= at and "queue" not in seen:
            queue, _ = observed_queue(replay, now, by_id)
            seen["queue"] = queue
            seen["finished"] = {job_id for job_id, state in replay.states.items()
                                if state.finish is not None}

    replay.run(submitted.pending, [j.duration for j in submitted.jobs],
               [j.team for j in submitted.jobs], after_event=look)
    result = forecast(seen["queue"], Scheduling(policy), rolls=4)  # type: ignore[arg-type]
    return result.predictions, seen["finished"]  # type: ignore[return-value]


def test_no_prediction_reads_a_future_run_time() -> None:
    jobs = generate_trace(300, 16, load=1.3, seed=5)
    policy = generated_policy(jobs, 16)
    middle = jobs[150].submit_time
    first, finished = predictions_at(jobs, policy, middle)
    assert first and len(finished) > 10
    # Every job not finished by then runs three times as long: nothing observable before
    # then changes, so neither may any prediction.
    longer = [job if job.job_id in finished else replace(job, duration=job.duration * 3)
              for job in jobs]
    again, _ = predictions_at(longer, policy, middle)
    assert again == first


def test_figures_follow_their_definitions() -> None:
    samples = [
        Sample("a", 0.0, p50=1000.0, p90=1500.0, baseline=5000.0, per_slot=2000.0,
               true_start=1200.0),  # covered; error 200/1200
        Sample("b", 0.0, p50=3000.0, p90=3500.0, baseline=3000.0, per_slot=100.0,
               true_start=4000.0),  # missed; error 1000/4000
        Sample("c", 0.0, p50=100.0, p90=200.0, baseline=100.0, per_slot=100.0,
               true_start=150.0),  # covered; a short wait: no error counted
    ]
    figures = accuracy(samples)
    assert figures["coverage_p90"] == round(2 / 3, 4)
    assert figures["long_waits"] == 2
    assert figures["median_error_ratio"] == 0.25  # the upper of 1/6 and 1/4
    assert figures["baseline_median_error_ratio"] == round(3800 / 1200, 4)


def test_a_bad_trace_is_a_sentence_and_writes_nothing(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from predict import main

    empty = tmp_path / "empty.csv"
    empty.write_text("")
    out = tmp_path / "predict.json"
    assert main(["--trace", str(empty), "--cost-waiting", "0", "--json", str(out),
                 "--plot", str(tmp_path / "p.png")]) == 2
    assert "empty: expected a header line" in capsys.readouterr().out
    assert not out.exists()
