#!/usr/bin/env bash
# Refreshes adapters/usage/litellm.json, the part of LiteLLM's model price
# table (model_prices_and_context_window.json, MIT) that Logbook ships,
# from the litellm package on PyPI, which carries the table as
# litellm/model_prices_and_context_window_backup.json.
#
#   scripts/refresh-prices.sh            # the latest litellm release
#   scripts/refresh-prices.sh 1.80.0     # a given release
#   LITELLM_JSON=path scripts/refresh-prices.sh 1.80.0   # a copy at hand
#
# Needs pip (or LITELLM_JSON), unzip and go. Review the diff of
# adapters/usage/litellm.json, run `go test ./adapters/usage`, and commit.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ -n "${LITELLM_JSON:-}" ]; then
  [ -n "$VERSION" ] || { echo "refresh-prices: name the litellm release the copy comes from" >&2; exit 2; }
  cp "$LITELLM_JSON" "$TMP/full.json"
else
  SPEC=litellm
  [ -n "$VERSION" ] && SPEC="litellm==$VERSION"
  python3 -m pip download --no-deps --only-binary=:all: -d "$TMP" "$SPEC" >&2
  WHEEL=$(ls "$TMP"/litellm-*.whl)
  VERSION=$(basename "$WHEEL" | cut -d- -f2)
  unzip -p "$WHEEL" litellm/model_prices_and_context_window_backup.json >"$TMP/full.json"
fi
go run ./adapters/usage/refresh -in "$TMP/full.json" -version "litellm $VERSION" -out adapters/usage/litellm.json
