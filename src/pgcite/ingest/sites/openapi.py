"""OpenAPI 3 and Swagger 2 documents as pages: one section per operation (method, path, summary,
parameters, request body and responses, schemas with their local `$ref`s read in, examples),
grouped by tag, anchored as Swagger UI deep-links them (`#/{tag}/{operationId}`), which is what
FastAPI's /docs and most published references use. The document becomes Markdown with an
explicit `{#anchor}` on each heading, so the rest of the pipeline reads it like any page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from pgcite.ingest.sources import is_included

__all__ = ["SPEC_FILES", "is_spec", "spec_markdown"]

# File names read as API descriptions wherever a site keeps pages.
SPEC_FILES: tuple[str, ...] = tuple(
    f"{stem}.{ext}" for stem in ("openapi", "swagger", "*.openapi", "*.swagger") for ext in ("yaml", "yml", "json")
)
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
SCHEMA_DEPTH = 3  # nested object properties listed this deep; deeper ones by name only
MAX_FIELDS = 60  # properties listed per schema, so one huge schema cannot fill the page
MAX_EXAMPLE_CHARS = 1500


def is_spec(path: str) -> bool:
    return is_included(path, SPEC_FILES)


def spec_markdown(text: str, path: str) -> tuple[str, str]:
    """(title, Markdown) of the OpenAPI 3 or Swagger 2 document `text`; ValueError (one line)
    when it is not one."""
    spec = _load(text, path)
    return _Renderer(spec).markdown()


def _load(text: str, path: str) -> dict[str, Any]:
    try:
        spec = json.loads(text) if path.lower().endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise ValueError(
            f"not valid {'JSON' if path.lower().endswith('.json') else 'YAML'}: {' '.join(str(err).split())[:200]}"
        ) from None
    if not isinstance(spec, dict) or not (
        _text(spec.get("openapi")).startswith("3") or _text(spec.get("swagger")) == "2.0"
    ):
        raise ValueError('not an OpenAPI 3 or Swagger 2 document (no `openapi: 3.x` or `swagger: "2.0"` at the top)')
    if not isinstance(spec.get("paths", {}), dict):
        raise ValueError("its `paths` is not a mapping")
    return spec


def _text(value: Any) -> str:
    return "" if value is None else " ".join(str(value).split()) if not isinstance(value, str) else value.strip()


def _inline(value: Any) -> str:
    """A description on one line (they are Markdown already; paragraphs joined)."""
    return " ".join(_text(value).split())


def _sentence(value: Any) -> str:
    """A description on one line, ending as a sentence ends."""
    text = _inline(value)
    return text if not text or text[-1] in ".!?:" else text + "."


def swagger_ui_id(operation: Mapping[str, Any], path: str, method: str) -> str:
    """Swagger UI's operation id: the spec's operationId, else the method and the path with every
    character that is not a word character turned to `_` (GET /pet/{id} -> get_pet__id_)."""
    explicit = _text(operation.get("operationId"))
    return explicit.replace(" ", "%20") if explicit else method + re.sub(r"\W", "_", path)


class _Renderer:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.swagger2 = "swagger" in spec and "openapi" not in spec

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

    # --- the document ------------------------------------------------------------------

    def markdown(self) -> tuple[str, str]:
        info: dict[str, Any] = self.spec["info"] if isinstance(self.spec.get("info"), dict) else {}
        title = _inline(info.get("title")) or "API reference"
        parts = [f"# {title}"]
        if _text(info.get("version")):
            parts.append(f"API version {_inline(info.get('version'))}.")
        if _text(info.get("description")):
            parts.append(_text(info.get("description")))
        servers = self._servers()
        if servers:
            parts.append("Servers:\n" + "\n".join(f"- {s}" for s in servers))
        parts += self._security_schemes()
        tags = self._tag_descriptions()
        for tag, operations in self._by_tag().items():
            parts.append(f"## {tag} {{#/{tag.replace(' ', '%20')}}}")
            if tags.get(tag):
                parts.append(tags[tag])
            for path, method, operation, shared in operations:
                parts.append(self._operation(tag, path, method, operation, shared))
        return title, "\n\n".join(parts) + "\n"

    def _servers(self) -> list[str]:
        if self.swagger2:
            host = _text(self.spec.get("host"))
            if not host:
                return []
            schemes = self.spec.get("schemes") or ["https"]
            return [
                f"`{scheme}://{host}{_text(self.spec.get('basePath'))}`"
                for scheme in schemes
                if isinstance(scheme, str)
            ]
        servers = self.spec.get("servers") or []
        return [
            f"`{_text(s.get('url'))}`" + (f": {_inline(s.get('description'))}" if s.get("description") else "")
            for s in servers
            if isinstance(s, dict) and s.get("url")
        ]

    def _security_schemes(self) -> list[str]:
        schemes = (
            self.spec.get("securityDefinitions")
            if self.swagger2
            else (self.spec.get("components") or {}).get("securitySchemes")
        )
        if not isinstance(schemes, dict) or not schemes:
            return []
        lines = []
        for name, scheme in schemes.items():
            scheme, _, _ = self.resolve(scheme)
            if not isinstance(scheme, dict):
                continue
            kind = _text(scheme.get("type"))
            where = ", ".join(
                f"{key} {_text(scheme[key])}" for key in ("scheme", "bearerFormat", "in", "name") if scheme.get(key)
            )
            described = f": {_inline(scheme.get('description'))}" if scheme.get("description") else ""
            lines.append(f"- `{name}`: {kind}{f' ({where})' if where else ''}{described}")
        return ["Authentication (security schemes):\n" + "\n".join(lines)]

    def _tag_descriptions(self) -> dict[str, str]:
        return {
            _text(tag.get("name")): _text(tag.get("description"))
            for tag in self.spec.get("tags") or []
            if isinstance(tag, dict) and tag.get("name")
        }

    def _by_tag(self) -> dict[str, list[tuple[str, str, dict[str, Any], list[Any]]]]:
        """Operations under their first tag ("default" for none), the spec's tag order first."""
        groups: dict[str, list[tuple[str, str, dict[str, Any], list[Any]]]] = {
            tag: [] for tag in self._tag_descriptions()
        }
        for path, item in (self.spec.get("paths") or {}).items():
            item, _, _ = self.resolve(item)
            if not isinstance(item, dict):
                continue
            shared: list[Any] = item["parameters"] if isinstance(item.get("parameters"), list) else []
            for method in METHODS:
                operation = item.get(method)
                if isinstance(operation, dict):
                    tags = [t for t in operation.get("tags") or [] if isinstance(t, str) and t.strip()]
                    groups.setdefault(tags[0].strip() if tags else "default", []).append(
                        (str(path), method, operation, shared)
                    )
        return {tag: operations for tag, operations in groups.items() if operations}

    # --- one operation -----------------------------------------------------------------

    def _operation(self, tag: str, path: str, method: str, operation: dict[str, Any], shared: list[Any]) -> str:
        anchor = f"/{tag.replace(' ', '%20')}/{swagger_ui_id(operation, path, method)}"
        summary = _inline(operation.get("summary"))
        heading = f"{method.upper()} {path}" + (f": {summary}" if summary else "")
        # The endpoint in the text too, not only the heading: an answer quotes text.
        named = f" (operation `{_inline(operation.get('operationId'))}`)" if _text(operation.get("operationId")) else ""
        described = _text(operation.get("description"))
        if _sentence(described) == _sentence(summary):  # often the same words twice
            described = ""
        said = " ".join(
            f for f in ["Deprecated." if operation.get("deprecated") else "", _sentence(summary), described] if f
        )
        parts = [f"### {heading} {{#{anchor}}}", f"`{method.upper()} {path}`{named}" + (f": {said}" if said else ".")]
        parameters = self._parameters([*shared, *(operation.get("parameters") or [])])
        if parameters["plain"]:
            parts.append("Parameters:\n" + "\n".join(parameters["plain"]))
        parts += self._request(operation, parameters)
        parts += self._responses(operation)
        security = operation.get("security", self.spec.get("security"))
        if isinstance(security, list):
            names = sorted({name for req in security if isinstance(req, dict) for name in req})
            parts.append(f"Authentication: {', '.join(f'`{n}`' for n in names)}." if names else "Authentication: none.")
        return "\n\n".join(parts)

    def _parameters(self, raw: list[Any]) -> dict[str, list[Any]]:
        """Path, query, header and cookie parameters as list items; Swagger 2's body and form
        parameters apart, as they describe the request body."""
        chosen: dict[tuple[str, str], dict[str, Any]] = {}
        for param in raw:
            param, _, _ = self.resolve(param)
            if isinstance(param, dict) and param.get("name"):
                chosen[(_text(param.get("in")), _text(param.get("name")))] = param  # the operation's own win
        out: dict[str, list[Any]] = {"plain": [], "body": [], "form": []}
        for (where, name), param in chosen.items():
            if where == "body":
                out["body"].append(param)
                continue
            if where == "formData":
                out["form"].append(param)
                continue
            schema = param.get("schema", param)  # Swagger 2 puts the type on the parameter itself
            facts = [where, self._type(schema)] + (["required"] if param.get("required") else [])
            out["plain"].append(self._item(name, facts, param, schema))
        return out

    def _request(self, operation: dict[str, Any], parameters: dict[str, list[Any]]) -> list[str]:
        if self.swagger2:
            types = ", ".join(operation.get("consumes") or self.spec.get("consumes") or [])
            for param in parameters["body"]:
                required = ", required" if param.get("required") else ""
                head = f"Request body ({types or 'application/json'}{required}){self._described(param, {})}"
                return [self._with_schema(head, "", param.get("schema"))]
            if parameters["form"]:
                fields = [
                    self._item(_text(p.get("name")), [self._type(p), "required" if p.get("required") else ""], p, p)
                    for p in parameters["form"]
                ]
                return [f"Request body ({types or 'form data'}), fields:\n" + "\n".join(fields)]
            return []
        body, _, _ = self.resolve(operation.get("requestBody"))
        if not isinstance(body, dict):
            return []
        parts = []
        for media, content in self._content(body):
            required = ", required" if body.get("required") else ""
            head = f"Request body ({media}{required}){self._described(body, {})}"
            parts.append(self._with_schema(head, "", content.get("schema")))
            parts += self._examples(content)
        return parts or [f"Request body{self._described(body, {})}"]

    def _responses(self, operation: dict[str, Any]) -> list[str]:
        responses = operation.get("responses")
        if not isinstance(responses, dict):
            return []
        parts = []
        for status, response in responses.items():
            response, _, _ = self.resolve(response)
            if not isinstance(response, dict):
                continue
            described = _sentence(response.get("description"))
            if self.swagger2:
                types = ", ".join(operation.get("produces") or self.spec.get("produces") or [])
                media = f" ({types})" if types and response.get("schema") else ""
                parts.append(
                    self._with_schema(f"Response `{status}`{media}: {described}", "Returns", response.get("schema"))
                )
                if isinstance(response.get("examples"), dict):
                    parts += [self._example_block(value) for value in list(response["examples"].values())[:1]]
                continue
            contents = list(self._content(response))
            if not contents:
                parts.append(f"Response `{status}`: {described}".rstrip(": "))
            for media, content in contents:
                parts.append(
                    self._with_schema(f"Response `{status}` ({media}): {described}", "Returns", content.get("schema"))
                )
                parts += self._examples(content)
            parts += self._headers(response)
        return parts

    def _headers(self, response: dict[str, Any]) -> list[str]:
        headers = response.get("headers")
        if not isinstance(headers, dict) or not headers:
            return []
        lines = []
        for name, header in headers.items():
            header, _, _ = self.resolve(header)
            if isinstance(header, dict):
                schema = header.get("schema", header)
                lines.append(self._item(name, [self._type(schema)], header, schema))
        return ["Response headers:\n" + "\n".join(lines)] if lines else []

    def _content(self, holder: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """(media types, content) of a body: the types whose schema is the same said once
        ("application/json, application/xml"), as one schema sent as JSON or XML is one answer."""
        content = holder.get("content")
        groups: dict[str, tuple[list[str], dict[str, Any]]] = {}
        for media, value in content.items() if isinstance(content, dict) else ():
            if isinstance(value, dict):
                key = json.dumps(value.get("schema"), sort_keys=True, default=str)
                groups.setdefault(key, ([], value))[0].append(str(media))
        for types, value in groups.values():
            yield ", ".join(types), value

    def _examples(self, content: dict[str, Any]) -> list[str]:
        if "example" in content:
            return [self._example_block(content["example"])]
        examples = content.get("examples")
        if isinstance(examples, dict):
            for example in examples.values():
                example, _, _ = self.resolve(example)
                if isinstance(example, dict) and "value" in example:
                    return [self._example_block(example["value"])]
        return []

    def _example_block(self, value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
        if len(text) > MAX_EXAMPLE_CHARS:
            text = text[:MAX_EXAMPLE_CHARS].rsplit("\n", 1)[0] + "\n…"
        language = "" if isinstance(value, str) else "json"
        fence = "`" * max(3, max((len(run) + 1 for run in re.findall(r"`{3,}", text)), default=3))
        return f"Example:\n\n{fence}{language}\n{text}\n{fence}"

    # --- schemas -----------------------------------------------------------------------

    def _with_schema(self, head: str, label: str, schema: Any) -> str:
        """`head`, then what the body holds: "Returns Book, fields:" and a list of them."""
        head = head.rstrip(": ")
        kind = self._type(schema) if schema is not None else ""
        if not kind:
            return head
        lines = self._fields(schema, 0, ())
        if head.endswith("."):  # after a description: "... stored. Returns Book"
            said = f"{head} {label or 'Schema:'} {kind}"
        else:
            said = f"{head}: {label + ' ' if label else ''}{kind}"
        return f"{said}, fields:\n" + "\n".join(lines) if lines else f"{said}."

    def _item(self, name: str, facts: list[str], holder: Mapping[str, Any], schema: Any) -> str:
        """One list item: "- `name` (type, required): what it is."."""
        return f"- `{name}` ({', '.join(f for f in facts if f)}){self._described(holder, schema)}"

    def _described(self, holder: Mapping[str, Any], schema: Any) -> str:
        schema, _, _ = self.resolve(schema)
        text = _sentence(holder.get("description") or (schema.get("description") if isinstance(schema, dict) else ""))
        facts = []
        if isinstance(schema, dict):
            if isinstance(schema.get("enum"), list):
                facts.append("One of " + ", ".join(f"`{_text(v)}`" for v in schema["enum"][:20]) + ".")
            if "default" in schema:
                facts.append(f"Default `{_text(schema['default'])}`.")
            if "example" in schema and not isinstance(schema["example"], (dict, list)):
                facts.append(f"Example `{_text(schema['example'])}`.")
        said = " ".join(f for f in [text, *facts] if f)
        return f": {said}" if said else ""

    def _type(self, schema: Any) -> str:
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
            item = self._type(schema.get("items"))
            return f"array of {item}" if item else "array"
        for combiner, word in (("oneOf", " or "), ("anyOf", " or "), ("allOf", " and ")):
            if isinstance(schema.get(combiner), list):
                return word.join(t for t in (self._type(s) for s in schema[combiner]) if t) or "object"
        kind = _text(kind) or ("object" if "properties" in schema else "")
        return f"{kind} ({_text(schema['format'])})" if schema.get("format") and kind else kind

    def _properties(self, schema: Any, seen: tuple[str, ...]) -> tuple[dict[str, Any], set[str], tuple[str, ...]]:
        """(properties, required names, refs followed) of an object schema, `allOf` merged."""
        schema, _, seen = self.resolve(schema, seen)
        if not isinstance(schema, dict):
            return {}, set(), seen
        if schema.get("type") == "array" or "items" in schema:
            return self._properties(schema.get("items"), seen)
        properties = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
        required = {str(r) for r in schema.get("required") or [] if isinstance(r, str)}
        for part in schema.get("allOf") or []:
            more, needed, _ = self._properties(part, seen)
            properties.update(more)
            required |= needed
        return properties, required, seen

    def _fields(self, schema: Any, depth: int, seen: tuple[str, ...]) -> list[str]:
        properties, required, seen = self._properties(schema, seen)
        lines: list[str] = []
        for name, prop in list(properties.items())[:MAX_FIELDS]:
            facts = [self._type(prop)] + (["required"] if name in required else [])
            if isinstance(prop, dict) and (prop.get("readOnly") or prop.get("writeOnly")):
                facts.append("read-only" if prop.get("readOnly") else "write-only")
            lines.append("  " * depth + self._item(name, facts, prop, prop))
            target, _, _ = self.resolve(prop, seen)
            if depth + 1 < SCHEMA_DEPTH and isinstance(target, dict) and "$ref" not in target:  # not circular
                lines += self._fields(prop, depth + 1, seen)
        if len(properties) > MAX_FIELDS:
            lines.append(f"{'  ' * depth}- … {len(properties) - MAX_FIELDS} more fields")
        return lines
