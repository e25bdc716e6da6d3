# The README's two commands: `make demo` shows the main job, `make test` runs every test.
PYTHON ?= python3

.PHONY: install demo demo-stop test unit record bench

install:
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[test]'

demo: install
	$(PYTHON) tests/demo.py

demo-stop:
	$(PYTHON) tests/cluster/controlplane.py down --dir .demo

test: install
	bash tests/cluster/build.sh
	$(PYTHON) -m pytest -q

unit: install
	$(PYTHON) -m pytest -q -m "not cluster"

record: install
	$(PYTHON) tests/record_wire.py

bench: install
	$(PYTHON) benchmarks/bench_parse.py
