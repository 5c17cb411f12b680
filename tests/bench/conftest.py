"""The benchmarks import each other as top-level modules (benchlib, peers), as they do when
run from bench/: put bench/ on the path for the tests of their pure parts, last, so that
bench/kubernetes.py does not hide the Kubernetes client's package."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.append(str(BENCH))
