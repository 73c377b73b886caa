#!/usr/bin/env bash
# The main job. Installs and builds what it needs first (tools/setup.sh).
#
# Until the migration engine lands this runs the memslot benchmark; it
# becomes the live-migration demo (two daemons, a dirtying guest, TLS).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tools/setup.sh" release
exec "$top/build/release/tools/hvbench" memslots "$@"
