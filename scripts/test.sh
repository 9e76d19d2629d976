#!/usr/bin/env bash
# Create/update the virtual environment, make sure Debian's chromium is there for the browser
# tests, then run the whole test suite (unit, AppTest and end-to-end).
# Usage: bash scripts/test.sh [extra pytest args]
# Under CI=true a missing /usr/bin/chromium fails the run (elsewhere the e2e tests skip).
source "$(dirname "$0")/_venv.sh"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[featagg] installing Debian's chromium for the browser tests" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "[featagg] apt-get could not install chromium" >&2
  else
    echo "[featagg] /usr/bin/chromium is missing and cannot be installed (not root)" >&2
  fi
fi
case "${CI:-}" in
  1|true|TRUE|True|yes)
    if [ ! -x /usr/bin/chromium ]; then
      echo "[featagg] CI: /usr/bin/chromium is required for the browser tests" >&2
      exit 1
    fi ;;
esac
export PYTHONHASHSEED=0
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
