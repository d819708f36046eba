#!/usr/bin/env bash
# Build the image and check what the tests cannot without a container builder: that it
# builds, that its awa-tui answers, and that it runs as user 10001. `make image-check`.
# It needs a running Docker daemon that can pull the base image; it fails saying so otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v docker >/dev/null || { echo "image-check: no docker client on this machine" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "image-check: docker reaches no daemon" >&2; exit 1; }
docker build -f deploy/Dockerfile -t awa-tui:check .
docker run --rm --entrypoint awa-tui awa-tui:check check --help | grep -q -- --alive
[ "$(docker run --rm --entrypoint id awa-tui:check -u)" = 10001 ] || { echo "image-check: not user 10001" >&2; exit 1; }
echo "image-check: the image builds, answers check --help and runs as user 10001"
