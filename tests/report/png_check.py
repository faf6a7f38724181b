#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank: decodes it with zlib only (no
imaging library) and counts distinct colours and non-background pixels.

Usage: png_check.py FILE WIDTH HEIGHT
Exit 0 when the image has the given size, at least 8 distinct colours and
at least 2 % of its pixels differ from the most common (background) colour.
"""

import collections
import struct
import sys
import zlib


def decode(data: bytes):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
            elif f != 0:
                raise ValueError(f"bad filter {f} on row {y}")
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def main() -> int:
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    width, height, rows = decode(open(path, "rb").read())
    counts = collections.Counter(px for row in rows for px in row)
    background, n = counts.most_common(1)[0]
    ink = 1 - n / (width * height)
    print(f"{path}: {width}x{height}, {len(counts)} colours, background {background}, {100 * ink:.1f} % ink")
    ok = (width, height) == (want_w, want_h) and len(counts) >= 8 and ink >= 0.02
    if not ok:
        print("blank or wrong size")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
