"""The schemas of an OpenAPI 3 or Swagger 2 document in words: a schema's type in a few words,
its fields as a nested list (local `$ref`s read in, `allOf` merged, circular refs named once),
and the one-line descriptions of what a parameter or field is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Schemas", "as_text", "inline", "sentence"]

SCHEMA_DEPTH = 3  # nested object properties listed this deep; deeper ones by name only
MAX_FIELDS = 60  # properties listed per schema, so one huge schema cannot fill the page


def as_text(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split()) if not isinstance(value, str) else value.strip()


def inline(value: Any) -> str:
    """A description on one line (they are Markdown already; paragraphs joined)."""
    return " ".join(as_text(value).split())


def sentence(value: Any) -> str:
    """A description on one line, ending as a sentence ends."""
    text = inline(value)
    return text if not text or text[-1] in ".!?:" else text + "."


class Schemas:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    # --- $ref --------------------------------------------------------------------------

    def resolve(self, node: Any, seen: tuple[str, ...] = ()) -> tuple[Any, str, tuple[str, ...]]:
        """(the node with its `$ref` followed, the name it was referred to by, the refs followed
        so far); a ref that cannot be followed (remote, missing, circular) stays a `$ref` node."""
        name = ""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#/") or ref in seen:
                return node, ref.rsplit("/", 1)[-1], seen
            target: Any = self.spec
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            if target is None:
                return node, ref.rsplit("/", 1)[-1], seen
            seen, name, node = (*seen, ref), ref.rsplit("/", 1)[-1], target
        return node, name, seen

    # --- schemas -----------------------------------------------------------------------

    def with_schema(self, head: str, label: str, schema: Any) -> str:
        """`head`, then what the body holds: "Returns Book, fields:" and a list of them."""
        head = head.rstrip(": ")
        kind = self.type_of(schema) if schema is not None else ""
        if not kind:
            return head
        lines = self.fields(schema, 0, ())
        if head.endswith("."):  # after a description: "... stored. Returns Book"
            said = f"{head} {label or 'Schema:'} {kind}"
        else:
            said = f"{head}: {label + ' ' if label else ''}{kind}"
        return f"{said}, fields:\n" + "\n".join(lines) if lines else f"{said}."

    def item(self, name: str, facts: list[str], holder: Mapping[str, Any], schema: Any) -> str:
        """One list item: "- `name` (type, required): what it is."."""
        return f"- `{name}` ({', '.join(f for f in facts if f)}){self.described(holder, schema)}"

    def described(self, holder: Mapping[str, Any], schema: Any) -> str:
        schema, _, _ = self.resolve(schema)
        text = sentence(holder.get("description") or (schema.get("description") if isinstance(schema, dict) else ""))
        facts = []
        if isinstance(schema, dict):
            if isinstance(schema.get("enum"), list):
                facts.append("One of " + ", ".join(f"`{as_text(v)}`" for v in schema["enum"][:20]) + ".")
            if "default" in schema:
                facts.append(f"Default `{as_text(schema['default'])}`.")
            if "example" in schema and not isinstance(schema["example"], (dict, list)):
                facts.append(f"Example `{as_text(schema['example'])}`.")
        said = " ".join(f for f in [text, *facts] if f)
        return f": {said}" if said else ""

    def type_of(self, schema: Any) -> str:
        """A schema's type in a few words: `Pet`, `array of Pet`, `string (date-time)`."""
        schema, name, _ = self.resolve(schema)
        if not isinstance(schema, dict):
            return ""
        if "$ref" in schema:
            return name
        if name:
            return name
        kind = schema.get("type")
        if isinstance(kind, list):  # OpenAPI 3.1: ["string", "null"]
            kind = " or ".join(str(k) for k in kind)
        if kind == "array":
            item = self.type_of(schema.get("items"))
            return f"array of {item}" if item else "array"
        for combiner, word in (("oneOf", " or "), ("anyOf", " or "), ("allOf", " and ")):
            if isinstance(schema.get(combiner), list):
                return word.join(t for t in (self.type_of(s) for s in schema[combiner]) if t) or "object"
        kind = as_text(kind) or ("object" if "properties" in schema else "")
        return f"{kind} ({as_text(schema['format'])})" if schema.get("format") and kind else kind

    def properties(self, schema: Any, seen: tuple[str, ...]) -> tuple[dict[str, Any], set[str], tuple[str, ...]]:
        """(properties, required names, refs followed) of an object schema, `allOf` merged."""
        schema, _, seen = self.resolve(schema, seen)
        if not isinstance(schema, dict):
            return {}, set(), seen
        if schema.get("type") == "array" or "items" in schema:
            return self.properties(schema.get("items"), seen)
        properties = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
        required = {str(r) for r in schema.get("required") or [] if isinstance(r, str)}
        for part in schema.get("allOf") or []:
            more, needed, _ = self.properties(part, seen)
            properties.update(more)
            required |= needed
        return properties, required, seen

    def fields(self, schema: Any, depth: int, seen: tuple[str, ...]) -> list[str]:
        properties, required, seen = self.properties(schema, seen)
        lines: list[str] = []
        for name, prop in list(properties.items())[:MAX_FIELDS]:
            facts = [self.type_of(prop)] + (["required"] if name in required else [])
            if isinstance(prop, dict) and (prop.get("readOnly") or prop.get("writeOnly")):
                facts.append("read-only" if prop.get("readOnly") else "write-only")
            lines.append("  " * depth + self.item(name, facts, prop, prop))
            target, _, _ = self.resolve(prop, seen)
            if depth + 1 < SCHEMA_DEPTH and isinstance(target, dict) and "$ref" not in target:  # not circular
                lines += self.fields(prop, depth + 1, seen)
        if len(properties) > MAX_FIELDS:
            lines.append(f"{'  ' * depth}- … {len(properties) - MAX_FIELDS} more fields")
        return lines
