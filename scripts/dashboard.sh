#!/usr/bin/env bash
# Create/update the virtual environment, then start the dashboard on the bundled sample data
# (Bibtex is loaded when a browser opens it).
# Usage: bash scripts/dashboard.sh [PORT]   (default 8501)
#   (--data-dir DIR, server-side datasets: see featagg_app/data_folder.py)
source "$(dirname "$0")/_venv.sh"
PORT="${1:-${PORT:-8501}}"
# featagg_app.serve serves at once and compiles the numba kernels in background processes
# (in the order pages need them; a job waits for the kernels it needs), so a fresh machine
# shows the first page within seconds. A session whose browser went away is freed after
# disconnectedSessionTTL seconds (its jobs cancelled, its runs dropped; featagg_app/reaper.py);
# a reconnect within that time resumes it.
echo "[featagg] serving the dashboard on http://localhost:$PORT (kernels compile in the background)" >&2
exec .venv/bin/python -m featagg_app.serve \
  --server.port "$PORT" --server.headless true \
  --browser.gatherUsageStats false --server.fileWatcherType none \
  --client.showErrorDetails none --server.maxUploadSize 50 \
  --server.disconnectedSessionTTL "${FEATAGG_SESSION_TTL_S:-60}"
