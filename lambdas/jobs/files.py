"""What `process_file` does to bytes: recognise the content type, and make thumbnails with Pillow.

Pillow is imported inside the functions that need it, so importing this module (the API function
does, through the job-type registry) costs nothing.

Memory: one source image is decoded at a time. JPEGs are decoded at the smallest power-of-two scale
that still covers the largest thumbnail (`draft`). The largest thumbnail is made from the source, the
source is then closed, and every smaller thumbnail is made from the previous one. Each thumbnail is
encoded and handed to the caller before the next is made.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

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
    """More pixels than Pillow's decompression-bomb limit allows."""


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


def thumbnails(source: IO[bytes], sizes: tuple[int, ...]) -> Iterator[Thumbnail]:
    """Thumbnails of the image in `source`, largest first, EXIF orientation applied.

    Raises CorruptImageError or ImageTooLargeError (both permanent: the same bytes fail the same way).
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        image = Image.open(source, formats=list(IMAGE_FORMATS))
    except Image.DecompressionBombError as error:
        raise ImageTooLargeError(str(error)) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise CorruptImageError(f"not a readable image: {error}") from None
    try:
        yield from _thumbnails(image, sizes, Image, ImageOps)
    finally:
        image.close()


def _thumbnails(image: Any, sizes: tuple[int, ...], image_module: Any, image_ops: Any) -> Iterator[Thumbnail]:
    limit = image_module.MAX_IMAGE_PIXELS
    if limit is not None and image.width * image.height > limit:
        # Pillow only warns between 1x and 2x its limit; a job treats the warning as the refusal.
        raise ImageTooLargeError(f"image has {image.width * image.height} pixels; the limit is {limit}")
    _, thumb_format, extension = IMAGE_FORMATS[image.format]
    content_type = _THUMBNAIL_CONTENT_TYPES[thumb_format]
    oriented = _oriented_size(image)
    ordered = sorted(set(sizes), reverse=True)
    image.draft(None, (ordered[0], ordered[0]))  # JPEG: decode at a reduced scale; others: no-op
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


def _oriented_size(image: Any) -> tuple[int, int]:
    """The image's size once its EXIF orientation is applied (5-8 turn it a quarter)."""
    orientation = image.getexif().get(0x0112, 1)
    width, height = image.size
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def _needs_conversion(image: Any, thumb_format: str) -> bool:
    if thumb_format == "JPEG":
        return image.mode not in ("RGB", "L")
    return image.mode not in ("RGB", "RGBA", "L", "LA")


def _working_mode(image: Any, thumb_format: str) -> str:
    has_alpha = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    return "RGBA" if has_alpha and thumb_format != "JPEG" else "RGB"


def _encode(image: Any, thumb_format: str) -> bytes:
    import io

    buffer = io.BytesIO()
    options: dict[str, Any] = {"optimize": True}
    if thumb_format in ("JPEG", "WEBP"):
        options["quality"] = 85
    image.save(buffer, format=thumb_format, **options)
    return buffer.getvalue()
