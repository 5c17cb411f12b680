from pathlib import Path

from trainyard.metadata.metrics_file import MAX_READ_BYTES, parse_line, read_new_metrics


def test_parse_line() -> None:
    point = parse_line(b'{"step": 3, "loss": 0.5, "acc": 1, "note": "x", "ok": true}')
    assert point is not None and point.step == 3 and point.values == {"loss": 0.5, "acc": 1.0}
    assert parse_line(b"[1, 2]") is None
    assert parse_line(b"not json") is None
    assert parse_line(b'{"step": "three", "loss": 1}') is None
    assert parse_line(b'{"note": "no numbers"}') is None
    assert parse_line(b'{"loss": NaN}') is None


def test_only_complete_lines_are_read_until_the_writer_is_done(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1}\ngarbage\n\n{"step": 2, "lo')
    batch = read_new_metrics(path, 0)
    assert [p.step for p in batch.points] == [1] and batch.malformed == 1
    assert batch.end_offset == path.read_bytes().index(b'{"step": 2')
    with path.open("ab") as fh:
        fh.write(b'ss": 0.5}\n{"step": 3, "loss": 0.1}')
    nxt = read_new_metrics(path, batch.end_offset)
    assert [p.step for p in nxt.points] == [2] and nxt.malformed == 0
    last = read_new_metrics(path, nxt.end_offset, final=True)
    assert [p.step for p in last.points] == [3]
    assert last.end_offset == path.stat().st_size


def test_missing_file_reads_nothing(tmp_path: Path) -> None:
    batch = read_new_metrics(tmp_path / "none", 0)
    assert batch.points == [] and batch.end_offset == 0


def test_a_line_longer_than_many_reads_counts_once(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1}\n' + b"a" * (3 * MAX_READ_BYTES + 5) +
                     b'\n{"step": 2, "loss": 0.5}\n')
    offset, malformed, steps = 0, 0, []
    for _ in range(10):
        batch = read_new_metrics(path, offset)
        offset, malformed = batch.end_offset, malformed + batch.malformed
        steps += [p.step for p in batch.points]
    assert steps == [1, 2] and malformed == 1
    assert offset == path.stat().st_size


def test_the_writers_last_partial_line_is_read_once(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"step": 1, "loss": 1}\n{"step": 2, "loss": 2}')
    last = read_new_metrics(path, 0, final=True)
    assert [p.step for p in last.points] == [1, 2]
    again = read_new_metrics(path, last.end_offset, final=True)
    assert again.points == [] and again.malformed == 0
