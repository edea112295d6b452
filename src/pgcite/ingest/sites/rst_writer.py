"""A docutils doctree as Markdown, as a reader sees Sphinx's page: sections as headings carrying
the ids Sphinx's HTML gives them, lists, tables, code blocks, admonitions as quotes, and inline
markup kept where Markdown has it (code, emphasis, links out); what no reader sees is left out."""

from __future__ import annotations

import re

from docutils import nodes

from pgcite.ingest.sites.base import code_fence

__all__ = ["DoctreeWriter"]

_ADMONITIONS = (
    nodes.attention, nodes.caution, nodes.danger, nodes.error, nodes.hint,
    nodes.important, nodes.note, nodes.tip, nodes.warning,
)  # fmt: skip
_SKIPPED = (
    nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message, nodes.raw,
    nodes.pending, nodes.transition, nodes.footnote, nodes.citation, nodes.field_name,
)  # fmt: skip


class DoctreeWriter:
    def __init__(self, document: nodes.document) -> None:
        self.document = document

    def blocks(self, node: nodes.Node, level: int) -> list[str]:
        """The Markdown blocks of `node`'s children; `level` is the next section's heading level."""
        out: list[str] = []
        for child in node.children:
            out += self.block(child, level)
        return [b for b in out if b.strip()]

    def block(self, node: nodes.Node, level: int) -> list[str]:
        if isinstance(node, _SKIPPED):
            return []
        if isinstance(node, nodes.section):
            title = node.next_node(nodes.title)
            heading = self.inline(title) if title is not None else ""
            anchor = f" {{#{self.section_id(node, heading)}}}" if node["ids"] else ""
            body = [c for c in node.children if not isinstance(c, nodes.title)]
            return [f"{'#' * min(level, 6)} {heading}{anchor}", *[b for c in body for b in self.block(c, level + 1)]]
        if isinstance(node, (nodes.paragraph, nodes.rubric)):
            text = self.inline(node)
            return [f"**{text}**" if isinstance(node, nodes.rubric) else text]
        if isinstance(node, (nodes.literal_block, nodes.doctest_block, nodes.math_block)):
            language = node.get("language") or ("python" if isinstance(node, nodes.doctest_block) else "")
            classes = [c for c in node.get("classes", []) if c != "code"]
            return [code_fence(node.astext(), language or (classes[0] if classes else ""), node.get("caption", ""))]
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            return [self.list_items(node)]
        if isinstance(node, nodes.definition_list):
            items = []
            for item in node.children:
                term = " ".join(self.inline(t) for t in item.children if isinstance(t, nodes.term))
                definition = [
                    b for d in item.children if isinstance(d, nodes.definition) for b in self.blocks(d, level)
                ]
                items.append(_item("- ", f"**{term}**" + (f": {definition[0]}" if definition else ""), definition[1:]))
            return ["\n".join(items)]
        if isinstance(node, nodes.field_list):
            items = []
            for item in node.children:
                name = self.inline(item.children[0]) if item.children else ""
                body = self.blocks(item.children[1], level) if len(item.children) > 1 else []
                items.append(_item("- ", f"**{name}**" + (f": {body[0]}" if body else ""), body[1:]))
            return ["\n".join(items)]
        if isinstance(node, (*_ADMONITIONS, nodes.admonition)):
            title = node.next_node(nodes.title) if isinstance(node, nodes.admonition) else None
            name = self.inline(title) if title is not None else type(node).__name__.capitalize()
            body = [b for c in node.children if not isinstance(c, nodes.title) for b in self.block(c, level)]
            return [_quote([f"**{name}:** {body[0]}" if body else f"**{name}**", *body[1:]])]
        if isinstance(node, nodes.block_quote):
            return [_quote(self.blocks(node, level))]
        if isinstance(node, nodes.attribution):
            return [f"— {self.inline(node)}"]
        if isinstance(node, nodes.line_block):
            return ["\n".join(self.inline(line) for line in node.findall(nodes.line))]
        if isinstance(node, nodes.table):
            return [self.table(node)]
        if isinstance(node, (nodes.topic, nodes.sidebar)):
            title = node.next_node(nodes.title)
            body = [b for c in node.children if not isinstance(c, nodes.title) for b in self.block(c, level)]
            return ([f"**{self.inline(title)}**"] if title is not None else []) + body
        if isinstance(node, (nodes.figure, nodes.image)):
            caption = node.next_node(nodes.caption)
            return [self.inline(caption)] if caption is not None else []
        if isinstance(node, nodes.Text):
            return [_text(node.astext().strip())]
        if isinstance(node, nodes.Element):
            return self.blocks(node, level)  # containers, compound, and what else holds blocks
        return []

    def section_id(self, node: nodes.section, heading: str) -> str:
        """The id Sphinx's HTML links the section by: its title's, even where a label of the same
        name took that id first (`.. _url-building:` over "URL Building"), else the one it got."""
        own = nodes.make_id(heading)
        return own if isinstance(self.document.ids.get(own), nodes.target) else str(node["ids"][0])

    def list_items(self, node: nodes.Element) -> str:
        items = []
        start = int(node.get("start", 1))
        for i, item in enumerate(node.children):
            marker = f"{start + i}. " if isinstance(node, nodes.enumerated_list) else "- "
            body = self.blocks(item, 7)
            items.append(_item(marker, body[0] if body else "", body[1:]))
        return "\n".join(items)

    def table(self, node: nodes.table) -> str:
        rows = [
            [" ".join(self.inline(p) if isinstance(p, nodes.paragraph) else p.astext() for p in entry.children)
             .replace("|", "\\|").replace("\n", " ") for entry in row.findall(nodes.entry)]
            for row in node.findall(nodes.row)
        ]  # fmt: skip
        rows = [r for r in rows if r]
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows[1:]])

    def inline(self, node: nodes.Node) -> str:
        parts: list[str] = []
        for child in node.children if isinstance(node, nodes.Element) else [node]:
            if isinstance(child, nodes.Text):
                parts.append(_text(child.astext().replace("\n", " ")))
            elif isinstance(child, (nodes.footnote_reference, nodes.system_message)):
                continue
            elif isinstance(child, nodes.literal):
                parts.append(_code_span(child.astext()))
            elif isinstance(child, nodes.strong):
                parts.append(f"**{self.inline(child)}**")
            elif isinstance(child, (nodes.emphasis, nodes.title_reference)):
                parts.append(f"*{self.inline(child)}*")
            elif isinstance(child, nodes.reference) and child.get("refuri", "").startswith(("http://", "https://")):
                parts.append(f"[{self.inline(child)}]({child['refuri']})")
            elif isinstance(child, nodes.substitution_reference):
                parts.append(self.substitution(child))
            elif isinstance(child, nodes.image):
                parts.append(child.get("alt", ""))
            elif isinstance(child, nodes.Element):
                parts.append(self.inline(child))
        return " ".join("".join(parts).split())

    def substitution(self, node: nodes.substitution_reference) -> str:
        name = nodes.fully_normalize_name(node.get("refname", ""))
        definition = self.document.substitution_defs.get(name)
        return self.inline(definition) if definition is not None else node.astext()


def _item(marker: str, first: str, rest: list[str]) -> str:
    """A list item: its first block after the marker, the others indented under it."""
    pad = " " * len(marker)
    lines = [marker + first.replace("\n", "\n" + pad)]
    for block in rest:
        lines.append("\n".join(pad + line if line else line for line in block.split("\n")))
    return "\n".join(lines) if not rest else "\n\n".join(lines)


def _quote(blocks: list[str]) -> str:
    return "\n>\n".join("\n".join("> " + line if line else ">" for line in b.split("\n")) for b in blocks)


_ENTITY_START = re.compile(r"&(?=#?\w+;)")


def _text(text: str) -> str:
    """reST text as Markdown text: a `<`, and a `&` that would start an entity, escaped, so that
    `form.<NAME>.data` is read as the page shows it, not as an HTML tag the cleaning strips."""
    return _ENTITY_START.sub(r"\\&", text.replace("<", "\\<"))


def _code_span(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}" if text.startswith("`") or text.endswith("`") else f"{ticks}{text}{ticks}"
