"""What `process_file` does to bytes: recognise the content type, and make thumbnails with Pillow.

Pillow is imported inside the functions that need it, so importing this module (the API function
does, through the job-type registry) costs nothing.

Memory: one source image is decoded at a time. JPEGs are decoded at the smallest power-of-two scale
that still covers the largest thumbnail (`draft`). The largest thumbnail is made from the source, the
source is then closed, and every smaller thumbnail is made from the previous one. Each thumbnail is
encoded and handed to the caller before the next is made.

Pillow's own guard (MAX_IMAGE_PIXELS, about 89 million pixels) is a bound per image, and not one on
memory: an 81-million-pixel RGBA PNG of 300 KB passes it and takes about 700 MB to decode and resize,
and a worker decodes the images of its whole batch at once. So before it decodes, `thumbnails` works
out from the header what the decode will hold (`decode_bytes`) and reserves that much of the
process's `DecodeBudget`: an image that needs more than the whole budget is refused (permanent, the
same bytes need the same memory), and one that does not fit beside the images being decoded now
waits for them.
"""

import functools
import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from lambdas import config

# Formats made into thumbnails: Pillow format name -> (content type, thumbnail format, extension).
IMAGE_FORMATS: dict[str, tuple[str, str, str]] = {
    "PNG": ("image/png", "PNG", "png"),
    "JPEG": ("image/jpeg", "JPEG", "jpg"),
    "WEBP": ("image/webp", "WEBP", "webp"),
    "GIF": ("image/gif", "PNG", "png"),  # the first frame, as a PNG
}
_THUMBNAIL_CONTENT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}

# Leading bytes of the formats we recognise; anything else is text (valid UTF-8) or octet-stream.
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),  # after "RIFF" and a length
    (b"%PDF-", 0, "application/pdf"),
    (b"PK\x03\x04", 0, "application/zip"),
    (b"\x1f\x8b", 0, "application/gzip"),
    (b"BM", 0, "image/bmp"),
    (b"II*\x00", 0, "image/tiff"),
    (b"MM\x00*", 0, "image/tiff"),
    (b"ftyp", 4, "video/mp4"),
)
SNIFF_BYTES = 512


class CorruptImageError(ValueError):
    """The bytes claim to be an image Pillow supports but cannot be decoded (corrupt or truncated)."""


class ImageTooLargeError(ValueError):
    """More pixels than Pillow's decompression-bomb limit allows, or more memory than the worker has."""


class DecodeBusyError(Exception):
    """The image fits the worker's memory, but not beside the images being decoded now (try later)."""


_MB = 1024 * 1024
# Measured peaks per pixel over the decode and the first resize (bench/decode_memory.py) stay within
# these: a pixel is stored in 1 byte (L, P, 1) or 4 (everything else), a conversion adds a 4-byte copy,
# and resizing an image with alpha premultiplies it into one more. The rest: Pillow's working buffers.
_HEADROOM = 1.15


def decode_bytes(mode: str, width: int, height: int, converted_to: str | None) -> int:
    """About how many bytes decoding an image of this mode and size (converted to another mode first,
    or not) and resizing it hold at once."""
    per_pixel = 1 if mode in ("1", "L", "P") else 4
    if converted_to is not None:
        per_pixel += 4
    if (converted_to or mode) in ("RGBA", "LA"):
        per_pixel += 4
    return int(width * height * per_pixel * _HEADROOM)


class DecodeBudget:
    """Bytes of decoded images the process may hold at once, shared by the threads of a batch."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._used = 0
        self._changed = threading.Condition()

    @contextmanager
    def reserve(self, needed: int, wait_seconds: float) -> Iterator[None]:
        """Hold `needed` bytes of the budget; raise rather than wait more than `wait_seconds`."""
        if needed > self.limit_bytes:
            raise ImageTooLargeError(
                f"decoding it needs about {needed // _MB} MB; this worker can spare "
                f"{self.limit_bytes // _MB} MB for an image"
            )
        with self._changed:
            if not self._changed.wait_for(lambda: self._used + needed <= self.limit_bytes, wait_seconds):
                raise DecodeBusyError(
                    f"decoding it needs about {needed // _MB} MB, and other images hold "
                    f"{self._used // _MB} of this worker's {self.limit_bytes // _MB} MB"
                )
            self._used += needed
        try:
            yield
        finally:
            with self._changed:
                self._used -= needed
                self._changed.notify_all()


@functools.cache
def decode_budget(memory_mb: int) -> DecodeBudget:
    """The one budget of a process whose function has `memory_mb` (what Lambda reports)."""
    return DecodeBudget((memory_mb - config.DECODE_RESERVED_MB) * _MB)


@dataclass(frozen=True)
class Thumbnail:
    size: int  # the configured long-side size it was made for
    width: int
    height: int
    data: bytes
    content_type: str
    extension: str


def detect_content_type(head: bytes) -> str:
    """The content type the first bytes of a file show (at least SNIFF_BYTES of them, if it has them)."""
    for signature, offset, content_type in _SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            if content_type == "image/webp" and not head.startswith(b"RIFF"):
                continue
            return content_type
    if head.startswith(b"%!PS"):
        return "application/postscript"
    return "text/plain; charset=utf-8" if _looks_like_text(head) else "application/octet-stream"


def _looks_like_text(head: bytes) -> bool:
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        # A multi-byte character cut by the sniffing window is still text.
        return error.start >= len(head) - 3 and error.reason == "unexpected end of data"
    return True


def fit_within(width: int, height: int, longest: int) -> tuple[int, int]:
    """The size with the same aspect whose long side is `longest`; images are never enlarged."""
    if width <= 0 or height <= 0:
        raise ValueError("image dimensions must be positive")
    scale = longest / max(width, height)
    if scale >= 1:
        return width, height
    return max(1, round(width * scale)), max(1, round(height * scale))


def thumbnails(
    source: IO[bytes], sizes: tuple[int, ...], budget: DecodeBudget, wait_seconds: float
) -> Iterator[Thumbnail]:
    """Thumbnails of the image in `source`, largest first, EXIF orientation applied.

    The decode holds its share of `budget` until the last thumbnail is made, after waiting at most
    `wait_seconds` for it. Raises CorruptImageError or ImageTooLargeError (both permanent: the same
    bytes fail the same way), or DecodeBusyError (the budget stayed taken by other images).
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image = Image.open(source, formats=list(IMAGE_FORMATS))
    except Image.DecompressionBombError as error:
        raise ImageTooLargeError(str(error)) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise CorruptImageError(f"not a readable image: {error}") from None
    try:
        yield from _thumbnails(image, sizes, budget, wait_seconds, Image, ImageOps)
    finally:
        image.close()


def _thumbnails(
    image: Any,
    sizes: tuple[int, ...],
    budget: DecodeBudget,
    wait_seconds: float,
    image_module: Any,
    image_ops: Any,
) -> Iterator[Thumbnail]:
    limit = image_module.MAX_IMAGE_PIXELS
    if limit is not None and image.width * image.height > limit:
        # Pillow only warns between 1x and 2x its limit; a job treats the warning as the refusal.
        raise ImageTooLargeError(f"image has {image.width * image.height} pixels; the limit is {limit}")
    _, thumb_format, extension = IMAGE_FORMATS[image.format]
    content_type = _THUMBNAIL_CONTENT_TYPES[thumb_format]
    full_size = image.size
    ordered = sorted(set(sizes), reverse=True)
    image.draft(None, (ordered[0], ordered[0]))  # JPEG: decode at a reduced scale; others: no-op
    # After draft: the size and mode the decode will really produce. Reserved before anything that
    # may decode (a PNG's getexif loads the whole image to look for an eXIf chunk after the pixels).
    converted_to = _working_mode(image, thumb_format) if _needs_conversion(image, thumb_format) else None
    needed = decode_bytes(image.mode, image.width, image.height, converted_to)
    with budget.reserve(needed, wait_seconds):
        oriented = _oriented_size(image, full_size)
        yield from _decoded_thumbnails(
            image, ordered, oriented, thumb_format, extension, content_type, image_module, image_ops
        )


def _decoded_thumbnails(
    image: Any,
    ordered: list[int],
    oriented: tuple[int, int],
    thumb_format: str,
    extension: str,
    content_type: str,
    image_module: Any,
    image_ops: Any,
) -> Iterator[Thumbnail]:
    try:
        image.load()
        image_ops.exif_transpose(image, in_place=True)
        current = (
            image.convert(_working_mode(image, thumb_format))
            if _needs_conversion(image, thumb_format)
            else image
        )
    except image_module.DecompressionBombError as error:
        raise ImageTooLargeError(str(error)) from None
    except (OSError, SyntaxError, ValueError, EOFError) as error:
        raise CorruptImageError(f"corrupt or truncated image: {error}") from None
    if current is not image:
        image.close()
    for size in ordered:
        width, height = fit_within(*oriented, size)
        if current.size != (width, height):
            smaller = current.resize((width, height), image_module.Resampling.LANCZOS, reducing_gap=3.0)
            current.close()
            current = smaller
        yield Thumbnail(size, width, height, _encode(current, thumb_format), content_type, extension)
    current.close()


def _oriented_size(image: Any, size: tuple[int, int]) -> tuple[int, int]:
    """`size` once the image's EXIF orientation is applied (5-8 turn it a quarter)."""
    orientation = image.getexif().get(0x0112, 1)
    width, height = size
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def _needs_conversion(image: Any, thumb_format: str) -> bool:
    if thumb_format == "JPEG":
        return image.mode not in ("RGB", "L")
    return image.mode not in ("RGB", "RGBA", "L", "LA")


def _working_mode(image: Any, thumb_format: str) -> str:
    has_alpha = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    return "RGBA" if has_alpha and thumb_format != "JPEG" else "RGB"


def _encode(image: Any, thumb_format: str) -> bytes:
    buffer = io.BytesIO()
    options: dict[str, Any] = {"optimize": True}
    if thumb_format in ("JPEG", "WEBP"):
        options["quality"] = 85
    image.save(buffer, format=thumb_format, **options)
    return buffer.getvalue()
