"""PNG bytes as inline data: the one encoder for plots in asset metadata (Markdown) and in reports."""

from __future__ import annotations

import base64


def png_data_uri(png: bytes) -> str:
    """``data:image/png;base64,…``; refuses bytes that are not a PNG."""
    if not png.startswith(b"\x89PNG"):
        raise ValueError("png_data_uri: not PNG bytes")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def png_markdown(png: bytes, alt: str) -> str:
    """The PNG as a Markdown image (Dagster's Markdown metadata renders it inline)."""
    return f"![{alt}]({png_data_uri(png)})"
