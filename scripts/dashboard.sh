#!/usr/bin/env bash
# Create/update the virtual environment, then start the dashboard on the bundled sample data.
# Usage: bash scripts/dashboard.sh [PORT]   (default 8501)
source "$(dirname "$0")/_venv.sh"
PORT="${1:-${PORT:-8501}}"
exec .venv/bin/python -m streamlit run app.py \
  --server.port "$PORT" --server.headless true \
  --browser.gatherUsageStats false --server.maxUploadSize 200
