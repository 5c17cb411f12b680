import pytest

from trainyard.quantities import describe_duration, duration_seconds, size_mib


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("10m", 600), ("1h30m", 5400), ("2d", 172800), ("1w", 604800),
    ("1.5h", 5400), ("45", 45), ("0", 0),
])
def test_durations_as_typed(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "2x", "-5", "nan", "inf", "1e400", "9" * 400 + "d"])
def test_what_is_no_duration(text: str) -> None:
    assert duration_seconds(text) is None


def test_policy_file_durations_need_a_unit() -> None:
    assert duration_seconds("45", bare_number=False) is None
    assert duration_seconds("45s", bare_number=False) == 45


@pytest.mark.parametrize(("text", "mib"), [
    ("512", 512), ("512M", 512), ("512m", 512), ("512Mi", 512), ("4G", 4096), ("4g", 4096),
    ("4Gi", 4096), ("1T", 1024 * 1024), ("1536k", 2), ("2048KiB", 2), ("0.5G", 512),
])
def test_sizes_as_docker_and_kubernetes_take_them(text: str, mib: int) -> None:
    assert size_mib(text) == mib


@pytest.mark.parametrize("text", ["", "G", "4X", "-1G", "4 GB B", "1e3G"])
def test_what_is_no_size(text: str) -> None:
    assert size_mib(text) is None


@pytest.mark.parametrize(("seconds", "said"), [
    (7200, "2 h"), (90, "1 min 30 s"), (5400, "1 h 30 min"), (30, "30 s"), (172800, "2 d"),
])
def test_durations_as_people_say_them(seconds: float, said: str) -> None:
    assert describe_duration(seconds) == said
