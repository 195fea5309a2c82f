"""tests/viewer_pixels.py PNG X0 Y0 X1 Y1 RGB...: how many pixels of the box [X0, X1) x [Y0, Y1)
of a PNG screenshot are within 40 of each colour RRGGBB (one count a line). The standard
library only: zlib and PNG's five row filters (8-bit RGB or RGBA, not interlaced)."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "only 8-bit RGB(A), not interlaced"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


w, h, bpp, rows = read_png(sys.argv[1])
x0, y0, x1, y1 = (int(v) for v in sys.argv[2:6])
for hexcol in sys.argv[6:]:
    want = [int(hexcol[i:i + 2], 16) for i in (0, 2, 4)]
    n = 0
    for y in range(max(0, y0), min(h, y1)):
        row = rows[y]
        for x in range(max(0, x0), min(w, x1)):
            px = row[x * bpp:x * bpp + 3]
            if all(abs(px[i] - want[i]) <= 40 for i in range(3)):
                n += 1
    print(n)
