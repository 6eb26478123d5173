"""Thumbnail maths and content recognition, on real images (tests/assets, made by make_assets.py)."""

import io
import struct
import zlib
from pathlib import Path

import pytest
from PIL import Image

from lambdas.jobs import files

ASSETS = Path(__file__).resolve().parents[2] / "assets"
# What the default worker can spare for decoding (1,024 MB less the reserve).
WORKER_BUDGET = files.decode_budget(1024)


@pytest.mark.parametrize(
    ("size", "longest", "expected"),
    [
        ((640, 480), 128, (128, 96)),
        ((480, 640), 128, (96, 128)),
        ((1024, 256), 512, (512, 128)),
        ((1000, 3), 128, (128, 1)),  # never zero pixels wide
        ((3, 1000), 128, (1, 128)),
        ((50, 40), 128, (50, 40)),  # never enlarged
        ((512, 512), 512, (512, 512)),
        ((333, 999), 512, (171, 512)),
    ],
)
def test_fit_within_keeps_aspect(size, longest, expected):
    assert files.fit_within(*size, longest) == expected


def _thumbs(name: str, sizes=(512, 128)) -> list[files.Thumbnail]:
    with (ASSETS / name).open("rb") as source:
        return list(files.thumbnails(source, sizes, WORKER_BUDGET, 0))


def _decoded(thumbnail: files.Thumbnail) -> Image.Image:
    image = Image.open(io.BytesIO(thumbnail.data))
    image.load()
    return image


@pytest.mark.parametrize(
    ("name", "fmt", "sizes"),
    [
        ("landscape.jpg", "JPEG", [(512, 384), (128, 96)]),
        ("transparent.png", "PNG", [(300, 200), (128, 85)]),
        ("wide.webp", "WEBP", [(512, 128), (128, 32)]),
        ("animated.gif", "PNG", [(200, 150), (128, 96)]),
        ("tiny.png", "PNG", [(50, 40), (50, 40)]),
    ],
)
def test_thumbnails_have_the_promised_pixel_sizes(name, fmt, sizes):
    thumbs = _thumbs(name)
    assert [(t.width, t.height) for t in thumbs] == sizes
    for thumb in thumbs:
        decoded = _decoded(thumb)
        assert decoded.format == fmt
        assert decoded.size == (thumb.width, thumb.height)


def test_exif_orientation_is_applied():
    # Stored 600x400 with orientation 6 (turn 90 degrees clockwise to view): the red block drawn at the
    # stored top-left corner is at the top-right once the picture is the right way up.
    thumbs = _thumbs("rotated_exif6.jpg")
    assert [(t.width, t.height) for t in thumbs] == [(341, 512), (85, 128)]
    image = _decoded(thumbs[0]).convert("RGB")
    red, _, blue = image.getpixel((image.width - 10, 10))
    assert red > 180
    assert blue < 80
    red, _, _ = image.getpixel((10, 10))
    assert red < 120
    assert 0x0112 not in image.getexif()  # no orientation left for a viewer to apply twice


def test_transparency_survives():
    image = _decoded(_thumbs("transparent.png")[1])
    assert image.mode == "RGBA"


@pytest.mark.parametrize("name", ["truncated.jpg", "corrupt.png"])
def test_broken_images_are_reported_as_corrupt(name):
    with pytest.raises(files.CorruptImageError):
        _thumbs(name)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares a huge canvas: Pillow's guard must refuse it from the header alone."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


def test_decompression_bomb_is_refused_before_decoding():
    with pytest.raises(files.ImageTooLargeError):
        list(files.thumbnails(io.BytesIO(_png_header_only(50_000, 50_000)), (128,), WORKER_BUDGET, 0))


def test_images_between_one_and_two_times_the_limit_are_refused_too():
    # Pillow only warns in this band; a job must not decode 100+ million pixels either way.
    with pytest.warns(Image.DecompressionBombWarning), pytest.raises(files.ImageTooLargeError):
        list(files.thumbnails(io.BytesIO(_png_header_only(10_000, 10_000)), (128,), WORKER_BUDGET, 0))


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("landscape.jpg", "image/jpeg"),
        ("transparent.png", "image/png"),
        ("wide.webp", "image/webp"),
        ("animated.gif", "image/gif"),
        ("notes.txt", "text/plain; charset=utf-8"),
    ],
)
def test_content_type_comes_from_the_bytes(name, content_type):
    assert files.detect_content_type((ASSETS / name).read_bytes()[: files.SNIFF_BYTES]) == content_type


@pytest.mark.parametrize(
    ("head", "content_type"),
    [
        (b"%PDF-1.7\n", "application/pdf"),
        (b"PK\x03\x04rest", "application/zip"),
        (b"\x00\x01\x02\x03", "application/octet-stream"),
        (b"", "application/octet-stream"),
        ("héllo".encode()[:2], "text/plain; charset=utf-8"),  # a character cut by the window
    ],
)
def test_content_type_of_other_files(head, content_type):
    assert files.detect_content_type(head) == content_type


def big_png(width: int, height: int, color_type: int = 6) -> bytes:
    """A real, decodable PNG of `width` x `height` black pixels (RGBA by default) that compresses to
    a few hundred KB: a decompression bomb under Pillow's pixel limit."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    channels = {0: 1, 2: 3, 6: 4}[color_type]
    row = bytes(1 + width * channels)  # filter byte 0, then the row's samples
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_an_image_needing_more_memory_than_the_worker_spares_is_refused_before_decoding():
    """Seen to fail against `reserve` without its `needed > self.limit_bytes` refusal (the image was
    decoded and made into thumbnails)."""
    # given: 4 Mpx of RGBA (about 35 MB to decode and resize) and a worker that spares 32 MB
    budget = files.DecodeBudget(32 * 1024 * 1024)
    bomb = big_png(2000, 2000)
    assert len(bomb) < 20_000
    # then
    with pytest.raises(files.ImageTooLargeError, match=r"needs about 35 MB; this worker can spare 32 MB"):
        list(files.thumbnails(io.BytesIO(bomb), (128,), budget, 0))


@pytest.mark.parametrize(
    ("mode", "converted_to", "per_pixel"),
    [
        ("L", None, 1),
        ("RGB", None, 4),
        ("RGBA", None, 8),
        ("P", "RGB", 5),
        ("P", "RGBA", 9),
        ("CMYK", "RGB", 8),
    ],
)
def test_decode_memory_counts_storage_conversion_and_premultiplied_alpha(mode, converted_to, per_pixel):
    assert files.decode_bytes(mode, 1000, 1000, converted_to) == int(1_000_000 * per_pixel * 1.15)


def test_images_that_do_not_fit_beside_those_being_decoded_wait_for_them():
    """Seen to fail against `reserve` adding `needed` without waiting (both held 60 of 100 at once)."""
    budget = files.DecodeBudget(100)
    with budget.reserve(60, 0):
        with pytest.raises(files.DecodeBusyError, match="other images hold"), budget.reserve(60, 0):
            pass
        with budget.reserve(40, 0):  # what is left is there to take
            pass
    with budget.reserve(60, 0):  # released when the first decode ended
        pass


def test_one_budget_per_process():
    assert files.decode_budget(1024) is files.decode_budget(1024)
    assert files.decode_budget(1024).limit_bytes == (1024 - 256) * 1024 * 1024


def test_nothing_is_decoded_before_the_memory_is_reserved(monkeypatch):
    """Seen to fail against `_thumbnails` reading the EXIF orientation before `budget.reserve` (a
    PNG's getexif loads every pixel to look for an eXIf chunk: four 81 Mpx PNGs peaked at 1,586 MB
    instead of 661 MB in bench/batch_limits.py)."""
    from PIL import PngImagePlugin

    loads: list[tuple[int, int]] = []
    real_load = PngImagePlugin.PngImageFile.load

    def counting_load(self):
        loads.append(self.size)
        return real_load(self)

    monkeypatch.setattr(PngImagePlugin.PngImageFile, "load", counting_load)
    budget = files.DecodeBudget(100 * 1024 * 1024)
    with budget.reserve(budget.limit_bytes, 0), pytest.raises(files.DecodeBusyError):
        list(files.thumbnails(io.BytesIO(big_png(500, 500)), (128,), budget, 0))
    assert loads == []
