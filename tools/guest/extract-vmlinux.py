#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unpack the ELF vmlinux inside a bzImage, for booting it through its
PVH entry (docs/guests.md): the setup header's payload_offset and
payload_length (boot protocol 2.08+) locate the compressed kernel, which
is decompressed by its magic (xz, gzip, zstd with the zstd program).

  extract-vmlinux.py BZIMAGE OUT

Exit 0 with OUT an ELF file; 1 with a message when BZIMAGE is not a
bzImage, its payload is of an unknown kind or does not decompress to an
ELF file. OUT is written through OUT.tmp and a rename.
"""
import gzip
import lzma
import os
import struct
import subprocess
import sys


def fail(msg):
    print(f"extract-vmlinux: {msg}", file=sys.stderr)
    sys.exit(1)


def payload(img):
    if len(img) < 0x250 or img[0x202:0x206] != b"HdrS":
        fail("not a bzImage (no HdrS setup header)")
    version = struct.unpack_from("<H", img, 0x206)[0]
    if version < 0x208:
        fail(f"boot protocol {version >> 8}.{version & 0xff} has no payload fields")
    setup_sects = img[0x1F1] or 4
    off, length = struct.unpack_from("<II", img, 0x248)
    start = (setup_sects + 1) * 512 + off
    if not length or start + length > len(img):
        fail("payload outside the file")
    return img[start:start + length]


def decompress(data):
    if data.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data)
    if data.startswith(b"\x1f\x8b"):
        return gzip.decompress(data)
    if data.startswith(b"\x28\xb5\x2f\xfd"):
        try:
            return subprocess.run(["zstd", "-dc"], input=data, check=True,
                                  capture_output=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            fail(f"zstd payload: {e} (apt-get install zstd)")
    fail(f"unknown payload compression (magic {data[:6].hex()})")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1], "rb") as f:
        img = f.read()
    elf = decompress(payload(img))
    if not elf.startswith(b"\x7fELF"):
        fail("the payload is not an ELF file")
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "wb") as f:
        f.write(elf)
    os.rename(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
