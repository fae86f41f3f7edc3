#!/usr/bin/python3
"""gen_bigtar.py OUT NTARS MEMBERS [SIZE] - a tar of NTARS nested tars of
MEMBERS members each (ImageNet-like names, SIZE bytes each, default 0),
streamed header by header (20 M empty members: ~10 GB, a few minutes), for
the index build's memory bench (tools/bench/bigtar.sh).  ustar headers made
from one template: only the name, size and checksum change."""
import sys


def header(name, size, template, base):
    h = bytearray(template)
    n = name.encode()
    h[0:len(n)] = n
    s = b"%011o\0" % size
    h[124:136] = s
    chk = base + sum(n) + sum(s)
    h[148:156] = b"%06o\0 " % chk
    return bytes(h)


def template():
    h = bytearray(512)
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[136:148] = b"14000000000\0"
    h[148:156] = b" " * 8
    h[156:157] = b"0"
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    # the base sum: the template with an empty name and size field zeroed
    return bytes(h), sum(h)


def main():
    out, ntars, members = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    tpl, base = template()
    data = b"\0" * size + b"\0" * (-size % 512)
    inner_len = members * (512 + len(data)) + 1024
    with open(out, "wb", buffering=1 << 20) as f:
        for t in range(ntars):
            wnid = "n%08d" % (t + 1)
            f.write(header(wnid + ".tar", inner_len, tpl, base))
            parts = []
            for m in range(members):
                parts.append(header("%s_%d.JPEG" % (wnid, m), size, tpl, base))
                if data:
                    parts.append(data)
            parts.append(b"\0" * 1024)
            f.write(b"".join(parts))
        f.write(b"\0" * 1024)


if __name__ == "__main__":
    main()
