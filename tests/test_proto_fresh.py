"""The committed gRPC code must be what protoc makes of proto/ today (`make proto`)."""

from pathlib import Path

from trainyard.protogen import REPO, generate


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    fresh = generate(tmp_path)
    assert fresh, "protoc generated nothing"
    committed = REPO / "src"
    stale = [p.name for p in fresh
             if (committed / p.relative_to(tmp_path)).read_bytes() != p.read_bytes()]
    assert not stale, f"stale generated code: {stale}; run `make proto`"
