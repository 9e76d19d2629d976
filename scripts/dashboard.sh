#!/usr/bin/env bash
# Create/update the virtual environment, then start the dashboard on the bundled sample data
# (Bibtex is loaded when a browser opens it).
#
# Usage: bash scripts/dashboard.sh [PORT] [--port PORT] [--public] [--max-load-mb MB]
#                                  [--data-dir DIR]
#   PORT            port to listen on (default 8501, or $PORT)
#   --public        listen on every network interface (a classroom: students open
#                   http://<this machine>:PORT); without it only this machine can connect
#   --max-load-mb   the most one upload or artifact import may inflate or allocate for
#                   declared sizes, in MiB (default 256; FEATAGG_MAX_LOAD_MB)
#   --data-dir DIR  server-side datasets offered in the sidebar (FEATAGG_DATA_DIR)
source "$(dirname "$0")/_venv.sh"
PORT="${PORT:-8501}"
ADDRESS="127.0.0.1"
while [ $# -gt 0 ]; do
  case "$1" in
    --public) ADDRESS="0.0.0.0"; shift ;;
    --port) PORT="${2:?--port needs a number}"; shift 2 ;;
    --max-load-mb) export FEATAGG_MAX_LOAD_MB="${2:?--max-load-mb needs a number of MiB}"; shift 2 ;;
    --data-dir) export FEATAGG_DATA_DIR="${2:?--data-dir needs a folder}"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    [0-9]*) PORT="$1"; shift ;;
    *) echo "[featagg] unknown option $1 (see bash scripts/dashboard.sh --help)" >&2; exit 2 ;;
  esac
done
export FEATAGG_MAX_LOAD_MB="${FEATAGG_MAX_LOAD_MB:-256}"
# featagg_app.server.serve serves at once and compiles the numba kernels in background processes
# (in the order pages need them; a job waits for the kernels it needs), so a fresh machine
# shows the first page within seconds; it says where it listens. A session whose browser
# went away is freed after disconnectedSessionTTL seconds (its jobs cancelled, its runs
# dropped; featagg_app/server/reaper.py); a reconnect within that time resumes it.
# The featagg-dashboard console script (pip install .) takes the same options and passes
# the same streamlit flags (tests/test_packaging.py checks they agree).
exec .venv/bin/python -m featagg_app.server.serve \
  --server.port "$PORT" --server.address "$ADDRESS" --server.headless true \
  --browser.gatherUsageStats false --server.fileWatcherType none \
  --client.showErrorDetails none \
  --server.disconnectedSessionTTL "${FEATAGG_SESSION_TTL_S:-60}"
