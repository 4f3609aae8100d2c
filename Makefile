# make demo: build, run the module and the ticket pair end to end, and a first comparison table
# (redis-benchmark: each command beside INCR). Under 6 minutes from a fresh clone on 2 cores.
# make test: every test.  make check: what runs without root or Docker.  make bench: the full comparison and the INCR benchmarks.
# make wheel: the Python package (idgen-redis, imported as idgen; target/wheels), by maturin.
# make dist: every artifact of a release, with SHA256SUMS, in target/dist.
# Both install what is missing first (scripts/deps.sh). make test runs the module's suites on
# Redis 7.0, Valkey 8.0, Redis 8.0 and Valkey 8.1 (IDGEN_SERVER picks the server).

.PHONY: all deps build demo test test-build check lint bench wheel dist clean
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

# The benches' comparison feature (other projects' crates: database drivers, Snowflake crates)
# is left out: no test uses it, and it was ~70 crates more to compile.
TEST_FLAGS = --workspace --no-default-features

# The server binaries and every test binary, built (what .ci/run waits for before it lints).
test-build: build
	cargo test $(TEST_FLAGS) --no-run

# Every suite on Redis 7.0, the Python tests, the module's suites on Valkey 8.0, Redis 8.0 and
# Valkey 8.1, and the crates' packaging: scripts/test.sh says how.
test: test-build
	@scripts/venv.sh
	@scripts/deps.sh --optional valkey-server
	@$(SKIP_NOTE)
	TEST_FLAGS="$(TEST_FLAGS)" scripts/test.sh
	@$(SKIP_NOTE)

# make check: the build, the unit tests and the suites that need only a redis-server, as any
# user, without root or Docker (scripts/check.sh says what it leaves to make test).
check:
	scripts/check.sh

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
	benches/forms.sh
	benches/library.sh
	benches/python.sh
	@echo "reports: target/compare/report.md, target/bench/module.md, target/bench/ticket.md, target/bench/forms.md, target/bench/library.md, target/bench/python.md"

wheel: deps
	scripts/wheel.sh

# A release in target/dist/: the module, the binaries, the wheel and sdist, the crates, the
# images and SHA256SUMS (scripts/dist.sh).
dist: build
	scripts/dist.sh

clean:
	cargo clean
