# syntax=docker/dockerfile:1
#
# The mirror's container image: `llmgw mirror serve` over a store on a volume.
#
#   docker build -t llmgw:0.1.0 .
#   docker run -p 8080:8080 -v llmgw-store:/store llmgw:0.1.0
#
# Two stages: the Rust toolchain builds the binary, and the runtime image holds only
# that binary and the CA certificates, so the image that reaches an air-gapped site
# carries no compiler and no package manager state it does not need.

ARG RUST_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${RUST_IMAGE} AS build
WORKDIR /src
COPY . .
# Cache mounts keep the crate registry and the target dir between builds; the binary is
# copied out of the cached target dir because cache mounts are not part of the layer.
# --locked: the image is built from exactly the dependency versions in Cargo.lock.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p llmgw \
    && install -D -m 0755 target/release/llmgw /out/llmgw

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="llmgw" \
      org.opencontainers.image.description="llmgw offline mirror: serves verified bundles to GPU nodes over GitHub-release and Hugging Face Hub compatible HTTP" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="${RUNTIME_IMAGE}"

# A fixed UID/GID (10001) so that a Kubernetes securityContext (runAsUser, fsGroup) and
# file ownership on a store volume can name it; /store is created owned by that user so
# a fresh named volume is writable without running anything as root.
RUN groupadd --system --gid 10001 llmgw \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin llmgw \
    && mkdir -p /store \
    && chown 10001:10001 /store

# CA certificates come from the build stage (which has them installed) rather than from
# apt, so the runtime stage needs no package index and no pinned package version.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/llmgw /usr/local/bin/llmgw

ENV LLMGW_STORE=/store
VOLUME ["/store"]
USER 10001:10001
EXPOSE 8080
# No HEALTHCHECK: the image has no HTTP client; Kubernetes probes /healthz and /readyz.
ENTRYPOINT ["llmgw"]
CMD ["mirror", "serve", "--store", "/store", "--listen", "0.0.0.0:8080"]
