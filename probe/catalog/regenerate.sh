#!/usr/bin/env bash
# Rewrites probe/catalog/pi-ai-0.82.1.json from the pinned pi-ai package (after a change to generate.mjs).
set -euo pipefail
exec "$(dirname "$0")/check.sh" --write
