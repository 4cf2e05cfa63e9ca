# syntax=docker/dockerfile:1
# modelpin's container image: one static (musl) binary on distroless `static` (no shell, no
# package manager), run as distroless's `nonroot` user, 65532:65532. It works with a read-only root
# file system: the only thing modelpin writes is its store, and /var/lib/modelpin (owned by 65532)
# is where a volume goes.
#
#   docker build -t modelpin .
#   docker run --rm --read-only --tmpfs /tmp modelpin demo
#   docker run --read-only -p 9464:9464 -v "$PWD:/etc/modelpin:ro" \
#       -v modelpin-store:/var/lib/modelpin -e OPENAI_API_KEY \
#       modelpin daemon --config /etc/modelpin/pins.toml
#
# with `store = "/var/lib/modelpin/store"` and `metrics = "0.0.0.0:9464"`, `metrics_public = true`
# in pins.toml (see docs/install.md and examples/kubernetes). The release workflow builds this for
# linux/amd64 and linux/arm64, each on a runner of its own architecture, and pushes
# ghcr.io/modelpin/modelpin:v<version>.

# The toolchain the project is tested with (README, .ci/run); Alpine's target is musl, which links
# statically by default.
FROM docker.io/library/rust:1.95.0-alpine3.23 AS build
# musl-dev: the C runtime `ring` (rustls's cryptography) compiles against. The Alpine release is
# pinned by the image tag above.
# hadolint ignore=DL3018
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin modelpin \
    && install -D -m 0755 target/release/modelpin /out/usr/local/bin/modelpin \
    && mkdir -p /out/var/lib/modelpin \
    && /out/usr/local/bin/modelpin --version

FROM gcr.io/distroless/static-debian13:nonroot
COPY --from=build /out/usr/local/bin/modelpin /usr/local/bin/modelpin
COPY --from=build --chown=65532:65532 /out/var/lib/modelpin /var/lib/modelpin
USER 65532:65532
WORKDIR /var/lib/modelpin
VOLUME ["/var/lib/modelpin"]
# The daemon's listener (status page, /api, /metrics, /healthz, OTLP /v1/traces).
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/modelpin"]
CMD ["--help"]
