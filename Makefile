# make demo: build, then run the module end to end.  make test: every test.
# Both install what is missing first (scripts/deps.sh).
MODULE := target/release/libredis_idgen.so

.PHONY: all deps build demo test lint bench clean
all: build

deps:
	@scripts/deps.sh

build: deps
	cargo build --release -p redis-idgen -p ticket-server

demo: build
	scripts/demo.sh

test: build
	cargo test --workspace

lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: build
	cargo build --release -p idgen-benches
	benches/module.sh
	benches/ticket.sh

clean:
	cargo clean
