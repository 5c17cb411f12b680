"""Regenerate the gRPC Python code from proto/ (`make proto`). Needs grpcio-tools (dev)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO / "proto"
PROTO_FILES = ("trainyard/v1/training.proto", "trainyard/v1/runtime.proto",
               "trainyard/v1/sample.proto")


def generate(out_dir: Path) -> list[Path]:
    """Write the generated modules under out_dir (as out_dir/trainyard/v1/...)."""
    from grpc_tools import protoc

    include = str(resources.files("grpc_tools") / "_proto")
    args = [
        "protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out_dir}",
        f"--pyi_out={out_dir}", f"--grpc_python_out={out_dir}",
        *(str(PROTO_ROOT / f) for f in PROTO_FILES),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    return sorted((out_dir / "trainyard" / "v1").glob("*_pb2*.py*"))


def main() -> None:
    written = generate(REPO / "src")
    for path in written:
        print(path.relative_to(REPO))


if __name__ == "__main__":
    main()
