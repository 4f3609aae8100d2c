# make demo: build, run the module and the ticket pair end to end, and a first comparison table
# (redis-benchmark: each command beside INCR). Under 6 minutes from a fresh clone on 2 cores.
# make test: every test.  make bench: the full comparison and the INCR benchmarks.
# make wheel: the idgen Python package (target/wheels), built by maturin.
# Both install what is missing first (scripts/deps.sh). make test runs the module's suites on
# redis-server, then on valkey-server when it is installed (IDGEN_SERVER picks the server).

.PHONY: all deps build demo test test-build lint bench wheel clean
all: build

deps:
	@scripts/deps.sh

build: deps
	cargo build --release -p redis-idgen -p ticket-server -p idgen-lease-worker

demo: build
	scripts/demo.sh
	@echo "the full comparison (peers, databases, instructions, Python): make bench"

# IDGEN_SKIP_DOCKER=1 skips the container tests on purpose; said before and after the run.
SKIP_NOTE = if [ "$${IDGEN_SKIP_DOCKER:-0}" != 0 ]; then echo "*** IDGEN_SKIP_DOCKER=$$IDGEN_SKIP_DOCKER: the container tests are SKIPPED ***"; fi

# The module's suites (every test file but those of the ticket server, the
# operations tools and the docs' shell examples, which name redis-server), run a second time on
# Valkey when valkey-server is installed. --workspace resolves features as the first run did, so
# the rerun builds nothing (with -p idgen-tests it rebuilt 61 crates and relinked every suite:
# 6 GB more of target/, minutes more of CI). The container suite is a directory
# (tests/tests/containers/), so the list never holds it.
MODULE_SUITES = $(filter-out ticket_% ops_% python_clients docs_shell,\
	$(basename $(notdir $(wildcard tests/tests/*.rs))))
VALKEY_NOTE = echo "*** valkey-server is not installed: the module's suites ran on Redis only ***"

# The benches' comparison feature (other projects' crates: database drivers, Snowflake crates)
# is left out: no test uses it, and it was ~70 crates more to compile.
TEST_FLAGS = --workspace --no-default-features

# The server binaries and every test binary, built (what .ci/run waits for before it lints).
test-build: build
	cargo test $(TEST_FLAGS) --no-run

test: test-build
	@scripts/venv.sh
	@scripts/deps.sh --optional valkey-server
	@$(SKIP_NOTE)
	cargo test $(TEST_FLAGS)
	scripts/python-tests.sh
	@if command -v valkey-server >/dev/null; then \
	  echo "the module's suites again, on $$(valkey-server --version | cut -d' ' -f1-3)"; \
	  IDGEN_SERVER=valkey-server cargo test $(TEST_FLAGS) $(addprefix --test ,$(MODULE_SUITES)); \
	else $(VALKEY_NOTE); fi
	@$(SKIP_NOTE)
	@command -v valkey-server >/dev/null || $(VALKEY_NOTE)

lint: deps
	cargo fmt --all -- --check
	scripts/check-msrv.sh
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy $(TEST_FLAGS) --all-targets -- -D warnings

bench: build
	@scripts/deps.sh --optional mariadb-server
	@scripts/deps.sh --optional postgresql
	@scripts/deps.sh --optional valgrind
	cargo bench --bench compare
	cargo build --release -p idgen-benches
	benches/module.sh
	benches/ticket.sh
	@echo "reports: target/compare/report.md, target/bench/module.md, target/bench/ticket.md"

wheel: deps
	scripts/wheel.sh

clean:
	cargo clean
