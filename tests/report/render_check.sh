#!/usr/bin/env bash
# Renders a report headless with Chromium and checks the screenshot is not
# blank (tests/report/png_check.py). Skipped (77) where chromium is missing.
# Usage: render_check.sh PLANNER_BIN SOURCE_DIR
set -euo pipefail
planner=$1
src=$2
command -v chromium >/dev/null || { echo "skipped: chromium is not installed"; exit 77; }
work=$(mktemp -d)
profile=$(mktemp -d)
trap 'rm -rf "$work" "$profile"' EXIT
cd "$work"
"$planner" model gpt --layers 4 --hidden 1024 --heads 16 --seq 1024 --vocab 8192 -o g.onnx >/dev/null
"$planner" estimate g.onnx --devices 8 --tp 2 --pp 2 --micro-batch 1 --global-batch 8 -o plan.json >/dev/null
"$planner" report plan.json -o report.html
# The page loads nothing from outside: no script, no link, no URL.
! grep -qiE '<script|<link|src=|href=|url\(' report.html
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
  --screenshot="$work/out.png" --window-size=1400,1000 "file://$work/report.html" 2>/dev/null
python3 "$src/tests/report/png_check.py" out.png 1400 1000
# The check can fail: a white 1400x1000 image is blank.
python3 - <<'PY'
import struct, zlib
def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
w, h = 1400, 1000
raw = b"".join(b"\x00" + b"\xff" * (3 * w) for _ in range(h))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + \
      chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open("blank.png", "wb").write(png)
PY
if python3 "$src/tests/report/png_check.py" blank.png 1400 1000; then
  echo "png_check passed a blank image"
  exit 1
fi
echo "report renders"
