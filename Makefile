VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv demo demo-docker test proto lint bench bench-launch bench-scheduler bench-policies clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

demo-docker: $(STAMP)
	$(PY) examples/demo.py --docker

test: $(STAMP) lint
	$(PY) -m pytest -q

proto: $(STAMP)
	$(PY) -m trainyard.protogen

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests $(wildcard bench examples)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/submit.py

bench-launch: $(STAMP)
	$(PY) bench/launch.py

bench-scheduler: $(STAMP)
	$(PY) bench/scheduler.py

bench-policies: $(STAMP)
	$(PY) bench/policies.py --generated 100000

clean:
	rm -rf $(VENV) .trainyard .pytest_cache
