# The `ocm` image, for those with Docker: the same image `scripts/build-image` writes without
# a container daemon (see docs/install.md, "The image"): a static `ocm` and `ocm-agent` on
# scratch, run as the non-root user 65532.
#
#   docker build --platform linux/amd64 -t ocm:0.1.0 .
#
# The binary is built for x86_64 only, so the image is linux/amd64.

FROM --platform=linux/amd64 rust:1.95.0-bookworm AS build
# Keep in step with [workspace.package] version in Cargo.toml (checked below).
ARG VERSION=0.1.0
WORKDIR /src
# The workspace, without target/ (a new workspace member needs a line here).
COPY Cargo.toml Cargo.lock rust-toolchain.toml ./
COPY crds crds
COPY apiserver apiserver
COPY runtime runtime
COPY registration registration
COPY agent agent
COPY work work
COPY placement placement
COPY addon-framework addon-framework
COPY operator operator
COPY webhook webhook
COPY hub hub
COPY dashboard dashboard
COPY setup setup
COPY bench bench
COPY examples examples
COPY addons addons
COPY cli cli
COPY test test
# What build scripts include (packed relocations, cli/build.rs and agent/build.rs).
COPY build-support build-support
# Static glibc (there is no libc in the image), symbols stripped.
RUN RUSTFLAGS='-C target-feature=+crt-static' CARGO_PROFILE_RELEASE_STRIP=symbols \
        cargo build --release --locked -p ocm --bin ocm --target x86_64-unknown-linux-gnu
# The agents alone, built for size (the `agent` profile of Cargo.toml).
RUN RUSTFLAGS='-C target-feature=+crt-static' CARGO_PROFILE_AGENT_STRIP=symbols \
        cargo build --profile agent --locked -p ocm-agent --bin ocm-agent \
        --target x86_64-unknown-linux-gnu
RUN set -eu; \
    ocm=target/x86_64-unknown-linux-gnu/release/ocm; \
    agent=target/x86_64-unknown-linux-gnu/agent/ocm-agent; \
    ldd "$ocm" 2>&1 | grep -Eq 'not a dynamic executable|statically linked'; \
    ldd "$agent" 2>&1 | grep -Eq 'not a dynamic executable|statically linked'; \
    test "$("$ocm" --version)" = "ocm $VERSION"; \
    test "$("$agent" --version)" = "ocm-agent $VERSION"; \
    mkdir -p /rootfs/etc/ssl/certs /rootfs/usr/local/bin /rootfs/home /rootfs/tmp /home-ocm; \
    chmod 1777 /rootfs/tmp; \
    install -m 0755 "$ocm" /rootfs/usr/local/bin/ocm; \
    install -m 0755 "$agent" /rootfs/usr/local/bin/ocm-agent; \
    install -m 0644 /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/; \
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
        'ocm:x:65532:65532:ocm:/home/ocm:/sbin/nologin' >/rootfs/etc/passwd; \
    printf '%s\n' 'root:x:0:' 'ocm:x:65532:' >/rootfs/etc/group; \
    printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >/rootfs/etc/nsswitch.conf; \
    chmod 0644 /rootfs/etc/passwd /rootfs/etc/group /rootfs/etc/nsswitch.conf

FROM scratch
ARG VERSION=0.1.0
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /home-ocm /home/ocm
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
LABEL org.opencontainers.image.title="ocm" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://example.invalid/ocm-rs" \
      org.opencontainers.image.licenses="Apache-2.0"
USER 65532:65532
WORKDIR /home/ocm
ENTRYPOINT ["/usr/local/bin/ocm"]
