VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv torch demo demo-docker demo-slurm test proto lint bench bench-peers-setup \
	bench-algorithms \
	bench-submit bench-launch bench-scheduler bench-policies bench-slurm bench-kubernetes bench-web \
	bench-sweeps bench-dependencies bench-scale \
	chaos clean

venv: $(STAMP)

# PyTorch, CPU build, for the distributed-training example and its tests; pinned exactly:
# an open range would pull a multi-GB CUDA build.
TORCH := torch==2.13.0
torch: $(STAMP)
	@$(PY) -c "import torch" 2>/dev/null || \
		$(PY) -m pip install --quiet --disable-pip-version-check $(TORCH)

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

demo-docker: $(STAMP)
	$(PY) examples/demo.py --docker

demo-slurm: $(STAMP)
	$(PY) examples/demo.py --slurm

# Two test processes, each taking whole files: most tests wait on servers, jobs and engines
# rather than compute. Each process starts its own PostgreSQL, Slurm cluster and API server.
TEST_WORKERS ?= 2
test: $(STAMP) lint
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

proto: $(STAMP)
	$(PY) -m trainyard.protogen

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard bench examples)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	MYPYPATH=bench $(VENV)/bin/mypy -p peers -p chaos

# The peer benchmark (bench/peers, bench/README.md): Slurm and Ray Jobs are set up here,
# once; a second run finds them in place.
RAY_VENV := bench/.venv-ray
RAY_STAMP := $(RAY_VENV)/.installed

bench: $(STAMP) bench-peers-setup
	PYTHONPATH=bench $(PY) -m peers

bench-peers-setup: $(RAY_STAMP)
	@command -v slurmctld >/dev/null && command -v slurmd >/dev/null && \
		command -v munged >/dev/null || \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge; }

$(RAY_STAMP): bench/requirements-ray.txt
	python3 -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/pip install --quiet --disable-pip-version-check -r bench/requirements-ray.txt
	touch $(RAY_STAMP)

bench-submit: $(STAMP)
	$(PY) bench/submit.py

bench-launch: $(STAMP)
	$(PY) bench/launch.py

bench-slurm: $(STAMP)
	$(PY) bench/slurm.py

bench-kubernetes: $(STAMP)
	$(PY) bench/kubernetes.py

bench-web: $(STAMP)
	$(PY) bench/web.py

bench-scheduler: $(STAMP)
	$(PY) bench/scheduler.py

bench-policies: $(STAMP)
	$(PY) bench/policies.py --generated 100000

bench-sweeps: $(STAMP)
	$(PY) bench/sweeps.py

bench-algorithms: $(STAMP)
	$(PY) bench/algorithms.py

bench-dependencies: $(STAMP)
	$(PY) bench/dependencies.py

# SQLite, then PostgreSQL (a throwaway cluster of its own): 1,000,000 finished jobs each.
# Both dialects, even where the first misses a goal; then fails if either did.
bench-scale: $(STAMP)
	@sqlite=0; $(PY) bench/scale.py || sqlite=$$?; \
	$(PY) bench/scale.py --postgresql && exit $$sqlite

# The fault suite (bench/chaos, bench/README.md): crashes and outages under real jobs.
# `make chaos CHAOS="sigkill_storm --quick"` runs some scenarios, or small versions.
chaos: $(STAMP)
	PYTHONPATH=bench $(PY) -m chaos $(CHAOS)

clean:
	rm -rf $(VENV) $(RAY_VENV) .trainyard .pytest_cache
