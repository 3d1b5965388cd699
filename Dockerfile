# syntax=docker/dockerfile:1.7
#
# The three benchmatrix images from one Dockerfile; pick one with --target:
#
#   docker build --target operator -t benchmatrix-operator .
#   docker build --target target   -t benchmatrix-target   .
#   docker build --target loadgen  -t benchmatrix-loadgen  .
#
# The binaries are static glibc executables (`-C target-feature=+crt-static` on the gnu target),
# so the runtime images are distroless "static": no shell, no libc, no package manager.
# Why glibc and not musl: the target and the load generator are the measured path, and musl's
# allocator is much slower under multi-threaded load; a benchmark tool must not add that cost.
# The same binaries build outside Docker with (see docs/book/src/kubernetes/images.md):
#
#   RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --locked \
#     --target x86_64-unknown-linux-gnu -p benchmatrix -p benchmatrix-target -p benchmatrix-loadgen
#
# The images run as the distroless "nonroot" user (UID/GID 65532) and need no writable path, so
# they work with readOnlyRootFilesystem: true.

# The toolchain the project is developed and tested with (the workspace's MSRV is lower).
ARG RUST_VERSION=1.95
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

# ---------------------------------------------------------------------------------------------
FROM rust:${RUST_VERSION}-bookworm AS builder
# A failure anywhere in a pipeline fails the step.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
COPY . .
# Cargo's output normally goes to ./build (.cargo/config.toml: the crate folder target/ is the
# service under test); here it goes to a cache mount, and the three binaries are copied out of it
# in the same step, because a cache mount is not part of the image.
# --target is explicit so that build scripts and proc macros stay dynamic while the final
# binaries are static (crt-static without --target would also apply to proc macros and fail).
# A binary that still needs a shared library would fail at start on distroless/static, so the
# step refuses any binary with a NEEDED entry.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/cargo-build,sharing=locked \
    set -eu; \
    triple="$(uname -m)-unknown-linux-gnu"; \
    RUSTFLAGS='-C target-feature=+crt-static' CARGO_TARGET_DIR=/cargo-build \
      cargo build --release --locked --target "${triple}" \
        -p benchmatrix -p benchmatrix-target -p benchmatrix-loadgen; \
    mkdir -p /out; \
    for bin in benchmatrix benchmatrix-target benchmatrix-loadgen; do \
      cp "/cargo-build/${triple}/release/${bin}" /out/; \
      if readelf -d "/out/${bin}" | grep -q NEEDED; then \
        echo "${bin} is not static:"; readelf -d "/out/${bin}" | grep NEEDED; exit 1; \
      fi; \
    done

# ---------------------------------------------------------------------------------------------
# Shared runtime settings; each image below adds its binary, entrypoint and labels.
FROM ${RUNTIME_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.source="https://github.com/benchmatrix/benchmatrix" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="benchmatrix" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
# Numeric, so Kubernetes can verify runAsNonRoot without a passwd lookup.
USER 65532:65532

# ---------------------------------------------------------------------------------------------
FROM runtime AS loadgen
LABEL org.opencontainers.image.title="benchmatrix-loadgen" \
      org.opencontainers.image.description="benchmatrix load generator: closed- and open-loop HTTP load, HDR percentiles"
COPY --from=builder /out/benchmatrix-loadgen /usr/local/bin/benchmatrix-loadgen
ENTRYPOINT ["/usr/local/bin/benchmatrix-loadgen"]

# ---------------------------------------------------------------------------------------------
FROM runtime AS target
LABEL org.opencontainers.image.title="benchmatrix-target" \
      org.opencontainers.image.description="benchmatrix built-in HTTP service under test (single | threads | pool)"
COPY --from=builder /out/benchmatrix-target /usr/local/bin/benchmatrix-target
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/benchmatrix-target"]

# ---------------------------------------------------------------------------------------------
# Last, so a plain `docker build .` gives the operator.
FROM runtime AS operator
LABEL org.opencontainers.image.title="benchmatrix-operator" \
      org.opencontainers.image.description="benchmatrix operator: runs BenchmarkRun matrices on Kubernetes"
COPY --from=builder /out/benchmatrix /usr/local/bin/benchmatrix
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/benchmatrix"]
CMD ["operator"]
