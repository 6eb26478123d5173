"""Regenerate the small images the job-type tests read: `python tests/assets/make_assets.py`.

The outputs are committed, so tests never depend on this script's Pillow version producing identical
bytes; it exists so anyone can see (and remake) what each file is.
"""

import io
from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
ORIENTATION = 0x0112


def _scene(width: int, height: int, mode: str = "RGB") -> Image.Image:
    """A picture with a marked top-left corner, so a test can tell which way up it was stored."""
    image = Image.new(mode, (width, height), (40, 90, 160, 255)[: len(mode)])
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 16):
        draw.line([(x, 0), (x, height)], fill=(200, 200, 60, 255)[: len(mode)])
    draw.rectangle([0, 0, width // 4, height // 4], fill=(220, 30, 30, 255)[: len(mode)])
    return image


def main() -> None:
    _scene(640, 480).save(HERE / "landscape.jpg", quality=70)

    # Stored 600 wide x 400 high, with EXIF orientation 6: viewers show it 400 wide x 600 high.
    exif = Image.Exif()
    exif[ORIENTATION] = 6
    _scene(600, 400).save(HERE / "rotated_exif6.jpg", quality=70, exif=exif)

    _scene(300, 200, "RGBA").save(HERE / "transparent.png", optimize=True)
    _scene(1024, 256).save(HERE / "wide.webp", quality=60)
    _scene(50, 40).save(HERE / "tiny.png")

    frames = [_scene(200, 150).convert("P"), Image.new("P", (200, 150), 3)]
    frames[0].save(HERE / "animated.gif", save_all=True, append_images=frames[1:], duration=100, loop=0)

    # A JPEG cut off half way, and a PNG whose signature is right but whose chunks are garbage.
    buffer = io.BytesIO()
    _scene(640, 480).save(buffer, format="JPEG", quality=70)
    (HERE / "truncated.jpg").write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    (HERE / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)

    (HERE / "notes.txt").write_text("Not an image: process_file writes its metadata instead.\n")


if __name__ == "__main__":
    main()
