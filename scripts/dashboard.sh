#!/usr/bin/env bash
# Create/update the virtual environment, then start the dashboard on the bundled sample data
# (Bibtex is loaded when a browser opens it).
# Usage: bash scripts/dashboard.sh [PORT]   (default 8501)
source "$(dirname "$0")/_venv.sh"
PORT="${1:-${PORT:-8501}}"
# featagg_app.serve compiles the numba kernels in the server process (warm_up) and then
# runs `streamlit run app.py` there, so no visitor ever waits for the JIT.
echo "[featagg] warming up, then serving the dashboard on http://localhost:$PORT" >&2
exec .venv/bin/python -m featagg_app.serve \
  --server.port "$PORT" --server.headless true \
  --browser.gatherUsageStats false --server.fileWatcherType none \
  --client.showErrorDetails none --server.maxUploadSize 50
