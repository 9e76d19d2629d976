# Sourced by the entry scripts: create/update .venv from requirements.txt when needed, then
# install featagg from this checkout into it (editable).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "[featagg] creating virtual environment in .venv" >&2
  "$PY" -m venv .venv
fi
REQ_HASH="$(cat requirements.txt ${EXTRA_REQUIREMENTS:-} | sha256sum | cut -c1-16)"
if [ "$(cat .venv/.req_hash 2>/dev/null || true)" != "$REQ_HASH" ]; then
  echo "[featagg] installing pinned requirements" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt ${EXTRA_REQUIREMENTS:+-r $EXTRA_REQUIREMENTS}
  echo "$REQ_HASH" > .venv/.req_hash
fi
# featagg itself, editable (no deps: the pins above are the deps; no build isolation: the
# pinned setuptools builds it offline), so the console scripts featagg / featagg-dashboard
# exist and run this checkout's files, as the tests do. Again when pyproject.toml changes
# (its packages, entry points) or the venv's install is of another checkout.
PKG_STAMP="$(cat pyproject.toml | sha256sum | cut -c1-16) $ROOT"
if [ "$(cat .venv/.pkg_stamp 2>/dev/null || true)" != "$PKG_STAMP" ]; then
  echo "[featagg] installing featagg from this checkout (editable)" >&2
  # quiet unless it fails (setuptools warns about every editable install)
  if ! PIP_OUT="$(.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e . 2>&1)"; then
    echo "$PIP_OUT" >&2
    exit 1
  fi
  echo "$PKG_STAMP" > .venv/.pkg_stamp
fi
export PATH="$ROOT/.venv/bin:$PATH"
