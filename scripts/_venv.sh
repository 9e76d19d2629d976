# Sourced by the entry scripts: create/update .venv from requirements.txt when needed.
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
export PATH="$ROOT/.venv/bin:$PATH"
