# The README's two commands: `make demo` shows the main job, `make test` runs every test.
# Everything runs in .venv, made by `python3 -m venv`: never the system interpreter, which Debian and
# Ubuntu (PEP 668: externally managed) and Homebrew refuse to pip-install into.
PYTHON3 ?= python3
VENV := .venv
PY := $(VENV)/bin/python
EXTRAS := test,gcp,aws,azure,mcp
# The tests run the console scripts as users do, from PATH: this venv's, not another install's.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install demo demo-stop lint test unit floors record bench bench-compression bench-startup bundle release

# A venv that failed half-way (Debian without python3-venv has no ensurepip) is removed, not reused.
$(PY):
	@$(PYTHON3) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "error: '$(PYTHON3) -m venv' failed; on Debian/Ubuntu install it with: apt-get install python3-venv" >&2; exit 1; }
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip

install: $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'

demo: install
	$(PY) tests/demo.py

demo-stop: $(PY)
	$(PY) tests/cluster/controlplane.py down --dir .demo

# Lint first: a finding fails in seconds, before the control plane is built.
test: install lint
	bash tests/cluster/build.sh
	bash tests/cluster/helm.sh
	timeout 3600 $(PY) -m pytest -q
	timeout 1500 bash .ci/floors

# ruff's chosen rules (pyproject.toml) on everything Python here: the package, its tests, the benchmarks and the
# release scripts; mypy --strict on the package.
lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m mypy kubectl_pvleft

# The unit suite: in-process tests only (no cluster, no child process, no cloud server or SDK, no install; see
# setup.cfg's markers): about 2 minutes wall, 31 s CPU, on the shared 2 cores (127 s measured for issue #32).
# It reinstalls only when setup.cfg changed: the install is editable.
unit: $(VENV)/.installed
	$(PY) -m pytest -q -m "not cluster and not integration"

$(VENV)/.installed: setup.cfg pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $@

# The unit suite on the lowest versions setup.cfg allows (.ci/floors.txt), in a venv of its own.
floors:
	bash .ci/floors

record: install
	$(PY) tests/record_wire.py

bench: install
	bash tests/cluster/build.sh
	$(PY) benchmarks/run.py --pvs 10000 --pvcs 10000 --pods 2000 --events 20000 --repeat 3 $(BENCH_ARGS)

# gzip on and off (disable-compression), on loopback and over a 20 ms / 50 Mbit link, into BENCHMARKS.md's
# Compression section; the loaded plane is kept in /tmp/pvleft-bench-compress and reused.
bench-compression: install
	$(PY) benchmarks/compression.py --keep $(BENCH_ARGS)

# The krew bundle's start-up beside the pip install's, into BENCHMARKS.md's Start-up section.
bench-startup: install bundle
	$(PY) plugin/bench_startup.py --bundle dist/kubectl-pvleft --write

# The self-contained krew program (PyInstaller, one folder) in dist/kubectl-pvleft/.
bundle:
	bash plugin/build-bundle.sh

# The krew archive of this platform, and dist/krew-manifest.yaml generated from it (never committed).
release:
	bash plugin/release.sh
