# Recipes are exactly the commands README.md shows.
.PHONY: run test ci crd lint

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

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
