# Recipes are exactly the commands README.md shows.
.PHONY: run test ci crd docs chart-docs book lint

# The main job: the sample matrix on this machine, no cluster needed.
run:
	cargo run --release -p benchmatrix -- run manifests/samples/quickstart.yaml

# The test suite, after installing what it needs (scripts/test-deps.sh).
test:
	bash scripts/test.sh

# What CI runs on a clean clone.
ci:
	bash .ci/run

# Regenerate the CRD files from the Rust types (the drift test fails until you do).
crd:
	cargo run -q -p benchmatrix -- crd > manifests/crd.yaml
	cp manifests/crd.yaml charts/benchmatrix/crds/benchmatrix.dev_benchmarkruns.yaml

# Regenerate the book's spec reference from the CRD (tests/tests/drift.rs fails until you do).
docs:
	cargo run -q -p benchmatrix --example exit-codes
	cargo run -q -p benchmatrix --example spec-reference > docs/book/src/reference/spec.md

# Regenerate the chart's values table from values.yaml's comments (tests/tests/chart_docs.rs).
chart-docs:
	python3 scripts/chart-docs.py > charts/benchmatrix/README.md

# Build the book into docs/book/book and check its links (mdBook: scripts/install-tools.sh).
book:
	mdbook build docs/book
	python3 scripts/check-links.py docs/book/book

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
