"""The page around every page of the site: one template, one stylesheet, links relative to the page so that the
site works from any folder, and from a file:// URL."""

from __future__ import annotations

import html

from pygments.formatters import HtmlFormatter

SITE_TITLE = "Learn, run and compare PPO"


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def page(title: str, body: str, depth: int, katex: bool = False, extra_css: tuple[str, ...] = ()) -> str:
    """A whole HTML document. `depth` is how many folders below the site's root the page sits: its links to the
    assets go up that many levels. KaTeX's stylesheet (vendored, with its fonts) only where math is; extra_css:
    more stylesheets of render/static/ (copied to assets/ by the build)."""
    up = "../" * depth
    sheets = ["style.css"] + (["katex/katex.min.css"] if katex else []) + list(extra_css)
    css = [f'<link rel="stylesheet" href="{up}assets/{name}">' for name in sheets]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)} - {SITE_TITLE}</title>",
        *css,
        "</head>",
        "<body>",
        f'<header class="top"><a href="{up}index.html">{SITE_TITLE}</a></header>',
        f"<main>{body}</main>",
        "</body>",
        "</html>",
        "",
    ])


def pygments_css() -> str:
    """The highlighting colours (Pygments' default style) for the code boxes, class "hl"."""
    return HtmlFormatter(style="default").get_style_defs(".hl")
