"""Helpers for the site's tests: the site built once per test session, and its pages read back as a small tree
(html.parser from the standard library: the tests need no HTML library of their own)."""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass, field
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Node or str
    parent: "Node | None" = None

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def walk(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list["Node"]:
        return [node for node in self.walk() if (tag is None or node.tag == tag)
                and (cls is None or cls in node.classes())
                and all(node.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def text(self, skip=lambda node: False) -> str:
        parts = []
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif not skip(child):
                parts.append(child.text(skip))
        return "".join(parts)

    def ids(self) -> list[str]:
        return [node.attrs["id"] for node in self.walk() if "id" in node.attrs]


class _Builder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, parent=self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, parent=self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is self.root:
            raise ValueError(f"</{tag}> closes nothing open")
        self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(path: Path) -> Node:
    builder = _Builder()
    builder.feed(path.read_text(encoding="utf-8"))
    builder.close()
    return builder.root


def words(text: str) -> str:
    """Letters and digits only: what Markdown's rendering keeps of a text, whatever its markup."""
    return re.sub(r"[\W_]+", "", text)
