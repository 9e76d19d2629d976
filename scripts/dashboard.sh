#!/usr/bin/env bash
# Create/update the virtual environment, then start the dashboard on the bundled sample data
# (Bibtex is loaded when a browser opens it).
# Usage: bash scripts/dashboard.sh [PORT]   (default 8501)
source "$(dirname "$0")/_venv.sh"
PORT="${1:-${PORT:-8501}}"
# Compile the numba kernels into their on-disk cache before the server starts, so the first
# visitor does not wait for the JIT (the app warms up again in-process, from that cache).
.venv/bin/python -m featagg_app.warmup || echo "[featagg] warm-up failed; continuing" >&2
echo "[featagg] dashboard on http://localhost:$PORT" >&2
exec .venv/bin/python -m streamlit run app.py \
  --server.port "$PORT" --server.headless true \
  --browser.gatherUsageStats false --server.fileWatcherType none \
  --client.showErrorDetails none --server.maxUploadSize 50
