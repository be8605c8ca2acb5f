"""Draws images/icon.png (128x128): a 4x4 grid of tiles, as a Triton kernel
tiles its data, with the diagonal lit, on a dark rounded square. Standard
library only; rerun it to regenerate the icon."""

import struct
import zlib
from pathlib import Path

SIZE = 128
SS = 4  # supersampling per axis, for smooth edges
BG = (30, 42, 58)
TILE = (64, 160, 170)
LIT = (245, 150, 50)


def inside_rounded(x, y, x0, y0, x1, y1, r):
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r and x0 <= x <= x1 and y0 <= y <= y1


def color_at(x, y):
    """RGBA of the point (x, y) in icon pixels."""
    if not inside_rounded(x, y, 0, 0, SIZE, SIZE, 22):
        return (0, 0, 0, 0)
    margin, gap = 20, 6
    cell = (SIZE - 2 * margin - 3 * gap) / 4
    for row in range(4):
        for col in range(4):
            x0 = margin + col * (cell + gap)
            y0 = margin + row * (cell + gap)
            if inside_rounded(x, y, x0, y0, x0 + cell, y0 + cell, 4):
                return (*(LIT if row == col else TILE), 255)
    return (*BG, 255)


def render():
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # PNG filter: none
        for px in range(SIZE):
            acc = [0, 0, 0, 0]
            for sy in range(SS):
                for sx in range(SS):
                    c = color_at(px + (sx + 0.5) / SS, py + (sy + 0.5) / SS)
                    for i in range(3):
                        acc[i] += c[i] * c[3]
                    acc[3] += c[3]
            alpha = acc[3] / (SS * SS)
            rgb = [round(acc[i] / acc[3]) if acc[3] else 0 for i in range(3)]
            row += bytes([*rgb, round(alpha)])
        rows.append(bytes(row))
    return b"".join(rows)


def png(raw):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    out = Path(__file__).with_name("icon.png")
    out.write_bytes(png(render()))
    print(out)
