"""The blocks of a bzip2 file, found and decoded one by one, so one plain ``.bz2`` splits into tasks.

bzip2 is a block format: every block starts with the 48-bit magic ``0x314159265359`` at any bit
position and carries its own CRC, and every stream ends with ``0x177245385090`` and the stream's
CRC. A block decodes on its own once its bits are wrapped in a one-block stream (a header, the
block, the end magic and the block's CRC as the stream's) for the native libbzip2 behind Python's
:mod:`bz2`. Hadoop's ``BZip2Codec`` splits files on the same markers.
"""

from __future__ import annotations

import bz2
from collections import deque
from collections.abc import Iterator
from typing import BinaryIO

BLOCK_MAGIC = 0x314159265359
END_MAGIC = 0x177245385090
MAGIC_BITS = 48
# A candidate that does not decode may be a false match inside compressed data (about one bit
# position in 2^48): it is joined with the next candidate, this many times, before the data is
# called corrupt.
MAX_FALSE_MATCHES = 2
READ_BYTES = 4 << 20


class CorruptBlock(ValueError):
    """A block that decodes neither alone nor joined with what follows."""


class TruncatedBlocks(ValueError):
    """The file ends inside a block, or after a block without its stream's end."""


def _patterns(magic: int) -> list[tuple[int, bytes, int, int, int, int]]:
    """For each bit shift 0-7: the five whole bytes to search for, and the edge bytes' bits."""
    out = []
    for shift in range(8):
        window = (magic << (8 - shift)).to_bytes(7, "big")  # 7 bytes, the magic from bit `shift`
        head_mask, tail_mask = 0xFF >> shift, (0xFF << (8 - shift)) & 0xFF
        out.append((shift, window[1:6], window[0] & head_mask, head_mask, window[6] & tail_mask, tail_mask))
    return out


_PATTERNS = {BLOCK_MAGIC: _patterns(BLOCK_MAGIC), END_MAGIC: _patterns(END_MAGIC)}


def find_magics(buf: bytes, magic: int, first: int = 0) -> list[int]:
    """Bit offsets in ``buf`` of every ``magic`` whose 7-byte window starts at byte ``first`` or
    later and lies wholly inside ``buf``."""
    found = []
    for shift, key, head, head_mask, tail, tail_mask in _PATTERNS[magic]:
        j = buf.find(key, first + 1)
        while j != -1 and j + 5 < len(buf):
            if buf[j - 1] & head_mask == head and buf[j + 5] & tail_mask == tail:
                found.append((j - 1) * 8 + shift)
            j = buf.find(key, j + 1)
    return sorted(found)


def _bits(buf: bytes, start: int, end: int) -> int:
    """Bits ``[start, end)`` of ``buf`` as an integer."""
    first, last = start // 8, (end + 7) // 8
    return (int.from_bytes(buf[first:last], "big") >> (last * 8 - end)) & ((1 << (end - start)) - 1)


def _stream(value: int, length: int) -> bytes:
    """A bzip2 stream of ``length`` bits after the header, padded to whole bytes."""
    pad = -length % 8
    return b"BZh9" + (value << pad).to_bytes((length + pad) // 8, "big")


def decode_block(buf: bytes, start: int, end: int) -> bytes:
    """The data of the block at bits ``[start, end)`` of ``buf``; ``OSError`` if it is not one."""
    crc = _bits(buf, start + MAGIC_BITS, start + MAGIC_BITS + 32)
    value = (((_bits(buf, start, end) << MAGIC_BITS) | END_MAGIC) << 32) | crc
    return bz2.decompress(_stream(value, end - start + MAGIC_BITS + 32))


def decode_last_block(buf: bytes, start: int) -> bytes:
    """The data of a block that runs to the end of ``buf`` with no magic after it (a cut file),
    ``b""`` if it is cut itself: libbzip2 gives a block's data, its CRC checked, once it ends."""
    end = len(buf) * 8
    return bz2.BZ2Decompressor().decompress(_stream(_bits(buf, start, end), end - start))


class _Scanner:
    """A file read forward from a byte, with the magics found so far: ``(file bit, is_end)``."""

    def __init__(self, f: BinaryIO, start: int):
        self.f = f
        self.base = start  # the file byte of buf[0]
        self.buf = b""
        self.next_window = 0  # the first buf byte whose window is not searched yet
        self.eof = False
        self.magics: deque[tuple[int, bool]] = deque()

    def want(self, n: int) -> None:
        """Read until ``n`` magics are known or the file ends."""
        while len(self.magics) < n and not self.eof:
            more = self.f.read(READ_BYTES)
            self.eof = not more
            self.buf += more
            found = [(b, False) for b in find_magics(self.buf, BLOCK_MAGIC, self.next_window)]
            found += [(b, True) for b in find_magics(self.buf, END_MAGIC, self.next_window)]
            self.magics.extend((self.base * 8 + b, end) for b, end in sorted(found))
            self.next_window = max(len(self.buf) - 6, 0)

    @property
    def end_bit(self) -> int:
        return (self.base + len(self.buf)) * 8

    def decode(self, start: int, end: int) -> bytes:
        return decode_block(self.buf, start - self.base * 8, end - self.base * 8)

    def decode_last(self, start: int) -> bytes:
        return decode_last_block(self.buf, start - self.base * 8)

    def forget_before(self, bit: int) -> None:
        """Drop the bytes before ``bit``: its block is decoded."""
        cut = bit // 8 - self.base
        if cut > READ_BYTES:
            self.buf = self.buf[cut:]
            self.base += cut
            self.next_window = max(self.next_window - cut, 0)


def iter_blocks(path: str, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """``(start bit, data)`` of each block of ``path`` from the first that starts at byte ``start``
    or later, in file order, for as long as the caller takes them.

    Raises :class:`CorruptBlock` for a block that does not decode although data follows it, or for
    bytes after the last stream's end (as one task reading the whole file does), and
    :class:`TruncatedBlocks` after the last block when the file ends inside a block or before the
    end of its last stream.
    """
    with open(path, "rb") as f:
        f.seek(start)
        scan = _Scanner(f, start)
        ended = True  # the last magic taken closed a stream
        # Until a block of the range decodes, a magic that decodes as none is a false match inside
        # the block the range starts in, and is passed over; from byte 0 the first magic follows
        # the file's header and is a block's.
        anchored = start == 0
        stream_end = None  # the bit after the last stream end taken (its magic and CRC)
        while True:
            scan.want(1)
            while scan.magics and scan.magics[0][1]:  # the end of a stream, and its CRC
                scan.want(2)
                stream_end = scan.magics.popleft()[0] + MAGIC_BITS + 32
                ended = stream_end <= scan.end_bit or not scan.eof
                scan.want(1)
            if not scan.magics:
                if not ended:
                    raise TruncatedBlocks(f"the file ends at byte {scan.end_bit // 8} before its stream's end")
                if stream_end is not None and scan.end_bit - stream_end >= 8:  # more than the last byte's padding
                    raise CorruptBlock(
                        f"{(scan.end_bit - stream_end) // 8} bytes after the end of the last bzip2 stream "
                        f"(byte {stream_end // 8}) are not bzip2 data"
                    )
                return
            first, data = scan.magics[0][0], b""
            for n in range(1, MAX_FALSE_MATCHES + 2):
                scan.want(n + 1)
                last = n >= len(scan.magics)
                stop = scan.end_bit if last else scan.magics[n][0]
                try:
                    data = scan.decode_last(first) if last else scan.decode(first, stop)
                except (OSError, ValueError):
                    data = b""
                if data or last:
                    break
            if not data:
                if not anchored:  # a false match inside the block the range starts in: look on
                    scan.magics.popleft()
                    continue
                if last:
                    raise TruncatedBlocks(f"the file ends inside the block at byte {first // 8}")
                raise CorruptBlock(f"corrupt bzip2 block near byte {first // 8}")
            for _ in range(min(n, len(scan.magics))):
                scan.magics.popleft()
            ended, anchored = False, True
            yield first, data
            scan.forget_before(stop)
