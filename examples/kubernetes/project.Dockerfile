# syntax=docker/dockerfile:1
# The project image fleet.yaml and single.yaml run: modelpin's released image with your project
# in it, pins.toml, probes/ and modelpin.lock in /etc/modelpin, the directory the manifests start
# `modelpin daemon --config /etc/modelpin/pins.toml` on. An image has no size cap; a ConfigMap
# holding modelpin.lock has one, 1 MiB (README.md).
#
# Copy this file into the repository that holds pins.toml, probes/ and the committed
# modelpin.lock. After each commit of `modelpin lock`'s result, CI runs, from that repository's
# root:
#
#   docker build -f project.Dockerfile -t registry.example.com/acme/modelpin-project:"$(git rev-parse --short HEAD)" .
#   docker push registry.example.com/acme/modelpin-project:"$(git rev-parse --short HEAD)"
#
# and the manifests' `image:` names that tag (README.md).
FROM ghcr.io/modelpin/modelpin:v0.1.0
# Owned by the image's user (65532, as the manifests run it), so a file a working copy keeps
# private (a umask of 077, a lock written by modelpin before 0.1.0 as 0600) is still readable. The
# pods' root file system is read-only, so the owner cannot change them there. The released image's user,
# entrypoint and working directory stay as they are. A project with no probe files leaves out the
# second COPY.
COPY --chown=65532:65532 pins.toml modelpin.lock /etc/modelpin/
COPY --chown=65532:65532 probes/ /etc/modelpin/probes/
