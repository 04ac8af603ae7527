# The two commands a newcomer needs: `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
DAGSTER_HOME := $(CURDIR)/data/dagster_home
DEMO_SETTINGS := settings/demo.toml
# `make ui SETTINGS=settings/demo.toml` runs the UI against the demo web.
SETTINGS ?=
# With the demo's settings, the UI also reads the start_date `make demo` wrote in its data root
# (crawl_assets/cli/demo.py: its daily partitions are the demo's days).
DEMO_START := data/demo/start_date.toml
UI_SETTINGS = $(SETTINGS)$(if $(and $(filter $(DEMO_SETTINGS),$(SETTINGS)),$(wildcard $(DEMO_START))),:$(CURDIR)/$(DEMO_START))

.PHONY: setup system-packages chromium replay-tools cluster-tools demo test mutants ui crawl demoweb clean

# uv (from PyPI, into .venv) installs every venv: it fetches and unpacks in parallel, several
# times pip's speed on a clean clone. .venv keeps pip, so `pip install -e '.[dev,bench]'` works too.
# Every install compiles its bytecode (uv, unlike pip, leaves that out by default): where
# PYTHONDONTWRITEBYTECODE is set, as on CI machines, each Python process would otherwise compile
# Dagster's modules again from source, seconds of CPU for every run and code server.
UV := $(BIN)/uv
UV_INSTALL := $(UV) pip install --quiet --compile-bytecode
$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet 'uv>=0.5'

# setup.py compiles the C kernels in crawl_assets/crawler/content/ in place: a changed kernel reinstalls.
$(INSTALLED): pyproject.toml setup.py $(wildcard crawl_assets/crawler/content/*.c) | $(UV)
	$(UV_INSTALL) --python $(BIN)/python -e '.[dev]'
	touch $(INSTALLED)

# The project's own modules are compiled too (an editable install leaves them as source).
setup: $(INSTALLED) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m compileall -q -j 0 crawl_assets sensors demoweb

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

# Serve the demo web, crawl three days of it (ending today) through Dagster into data/demo, print a table a day.
demo: setup chromium
	DAGSTER_HOME=$(DAGSTER_HOME) RECRAWL_SETTINGS=$(DEMO_SETTINGS) $(BIN)/python -m crawl_assets.cli.demo

# System pieces the tests drive: Debian's chromium for the UI test (Playwright uses it; it
# never downloads a browser of its own), PostgreSQL and Redis for the cluster test (it starts
# its own servers on loopback; none is left running). Installed with apt-get when missing (CI
# runs as root); deploy/apt-install waits (at most 10 minutes, saying so) while another
# install holds apt's lock, then says which lock is held.
APT_INSTALL := deploy/apt-install
system-packages: chromium
	@{ ls /usr/lib/postgresql/*/bin/initdb && command -v redis-server; } >/dev/null 2>&1 || { \
	  echo "installing Debian's postgresql and redis-server for the cluster test"; \
	  $(APT_INSTALL) postgresql redis-server >/dev/null; }

# Debian's chromium alone: the render tier (make demo renders the demo web's script-only hosts).
chromium:
	@command -v chromium >/dev/null || { \
	  echo "installing Debian's chromium for the render tier and the UI test"; \
	  $(APT_INSTALL) chromium >/dev/null; }

# dagster-postgres and dagster-celery (the `cluster` extra) in .venv: each of their releases pins
# one dagster release exactly, and the project pins that release (docs/SCALE.md).
CLUSTER_INSTALLED := $(VENV)/.cluster-installed
cluster-tools: $(CLUSTER_INSTALLED)
# After .venv's own install: two uv installs into one venv at once would race.
$(CLUSTER_INSTALLED): pyproject.toml | $(INSTALLED)
	$(UV_INSTALL) --python $(BIN)/python -e '.[dev,cluster]'
	touch $@

# pywb (the replay test's `wayback` and `wb-manager`) in a venv of its own: it requires
# brotlipy, whose `brotli` package shadows Google's brotli that the crawler decodes with.
PYWB := .tools/pywb
replay-tools: $(PYWB)/bin/wayback
$(PYWB)/bin/wayback: | $(UV)
	test -x $(PYWB)/bin/python || $(PYTHON) -m venv --without-pip $(PYWB)
	$(UV_INSTALL) --python $(PYWB)/bin/python 'pywb==2.10.0'

# The suite on three pytest-xdist workers on CI's two cores: its tests wait on servers and
# daemons much of the time, so a third worker fills the idle CPU (572 -> 489 s on a quiet 2-core
# machine, 2026-12-07; four loaded two cores past the suite's own time limits); tests sharing
# one `dagster dev`, crawl or module stay on one worker, the longest first
# (tests/xdist_schedule.py). The installs run side by side. The 15 slowest tests close
# the output, so drift shows in every CI log.
test:
	$(MAKE) -j4 setup system-packages replay-tools cluster-tools
	$(BIN)/python -m compileall -q -j 0 tests
	$(BIN)/python -m pytest -q -n 3 --dist loadgroup --no-loadscope-reorder --durations=15

# Mutation testing (mutmut 3.x, the dev extra) of the modules where the rules live, or of
# MODULES="crawl_assets/.../x.py ...": each module mutated alone and run against its own test
# files (tests/mutation/mutants.py), then each module's score and its surviving mutants. CPU
# heavy (minutes a module): not part of `make test`. README's Development section says more.
MODULES ?=
mutants: setup
	$(BIN)/python tests/mutation/mutants.py $(MODULES)

# The Dagster UI on http://127.0.0.1:$(UI_PORT); run history persists in data/dagster_home.
# Ctrl-C, SIGINT and SIGTERM stop it, started in the foreground or with `&` (SIGINT ignored):
# `exec` leaves make as its parent, which passes SIGTERM on, and crawl_assets/cli/supervisor.py
# gives dagster dev a default SIGINT, stops it when make dies, and removes its daemon's heartbeats.
UI_PORT ?= 3000
ui: setup
	exec env DAGSTER_HOME=$(DAGSTER_HOME) RECRAWL_SETTINGS=$(UI_SETTINGS) $(BIN)/python -m crawl_assets.cli.supervisor \
	  $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(UI_PORT)

# One cycle over your own seed lists (data/seeds/*.txt) with the real-crawl settings.
crawl: setup
	DAGSTER_HOME=$(DAGSTER_HOME) RECRAWL_SETTINGS=$(SETTINGS) $(BIN)/python -m crawl_assets.cli.cycle

# The demo web in the foreground (for `make ui SETTINGS=settings/demo.toml`); Ctrl-C stops it.
demoweb: setup
	$(BIN)/python -m demoweb serve --port 8471 --hosts 30 --pages-per-host 30 --traps --near-duplicates --spa --access-log data/demoweb/access_log.parquet

# Every output under data/ (tables, WARC files, filters, the catalog, work_dir), whatever new
# ones come; the seed lists, the blocklist and Dagster's run history stay.
clean:
	find data -mindepth 1 -maxdepth 1 ! -name seeds ! -name blocklist.txt ! -name dagster_home -exec rm -rf {} +
