#!/usr/bin/env bash
# Replays a fuzz target's seed corpus (outside --config=fuzz): $1 the target, $2 the
# corpus directory (relative to the workspace).
set -euo pipefail
exec "$1" "$2"
