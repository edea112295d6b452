"""OpenAPI 3 and Swagger 2 documents as pages: one section per operation (method, path, summary,
parameters, request body and responses, schemas with their local `$ref`s read in, examples),
grouped by tag, anchored as the renderer that publishes it links them (openapi_anchors.py: Swagger
UI's `#/{tag}/{operationId}`, which FastAPI's /docs and most published references use, or Redoc's).
The document becomes Markdown with an explicit `{#anchor}` on each heading, so the rest of the
pipeline reads it like any page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from pgcite.ingest import bounded_yaml
from pgcite.ingest.sites.openapi_anchors import UNTAGGED, operation_anchor, renderer_of, tag_anchor
from pgcite.ingest.sites.openapi_schemas import Schemas, as_text, inline, sentence
from pgcite.ingest.sources import is_included

__all__ = ["SPEC_FILES", "is_spec", "spec_markdown"]

# File names read as API descriptions wherever a site keeps pages.
SPEC_FILES: tuple[str, ...] = tuple(
    f"{stem}.{ext}" for stem in ("openapi", "swagger", "*.openapi", "*.swagger") for ext in ("yaml", "yml", "json")
)
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_EXAMPLE_CHARS = 1500


def is_spec(path: str) -> bool:
    return is_included(path, SPEC_FILES)


def spec_markdown(text: str, path: str, renderer: str | None = None) -> tuple[str, str]:
    """(title, Markdown) of the OpenAPI 3 or Swagger 2 document `text`, anchored as `renderer`
    publishes it (None: as the document suggests); ValueError (one line) when it is not one."""
    spec = _load(text, path)
    return _Renderer(spec, renderer_of(spec, renderer)).markdown()


def _load(text: str, path: str) -> dict[str, Any]:
    try:
        # YAML's aliases bounded: a "billion laughs" would be expanded by whatever reads it next.
        spec = json.loads(text) if path.lower().endswith(".json") else bounded_yaml.load(text)
    except bounded_yaml.TooManyAliases as err:
        raise bounded_yaml.TooManyAliases(f"{err}, or share them with $ref") from None
    except bounded_yaml.Refused:
        raise
    except RecursionError:
        raise ValueError("nested deeper than pgcite reads JSON (hundreds of levels)") from None
    except (ValueError, yaml.YAMLError) as err:
        raise ValueError(
            f"not valid {'JSON' if path.lower().endswith('.json') else 'YAML'}: {' '.join(str(err).split())[:200]}"
        ) from None
    if not isinstance(spec, dict) or not (
        as_text(spec.get("openapi")).startswith("3") or as_text(spec.get("swagger")) == "2.0"
    ):
        raise ValueError('not an OpenAPI 3 or Swagger 2 document (no `openapi: 3.x` or `swagger: "2.0"` at the top)')
    if not isinstance(spec.get("paths", {}), dict):
        raise ValueError("its `paths` is not a mapping")
    return spec


class _Renderer(Schemas):
    def __init__(self, spec: dict[str, Any], renderer: str) -> None:
        super().__init__(spec)
        self.renderer = renderer
        self.swagger2 = "swagger" in spec and "openapi" not in spec

    # --- the document ------------------------------------------------------------------

    def markdown(self) -> tuple[str, str]:
        info: dict[str, Any] = self.spec["info"] if isinstance(self.spec.get("info"), dict) else {}
        title = inline(info.get("title")) or "API reference"
        parts = [f"# {title}"]
        if as_text(info.get("version")):
            parts.append(f"API version {inline(info.get('version'))}.")
        if as_text(info.get("description")):
            parts.append(as_text(info.get("description")))
        servers = self._servers()
        if servers:
            parts.append("Servers:\n" + "\n".join(f"- {s}" for s in servers))
        parts += self._security_schemes()
        tags = self._tag_descriptions()
        # Redoc's operations without tags ("") are in no group: first, under no heading of their own.
        for tag, operations in sorted(self._by_tag().items(), key=lambda group: group[0] != ""):
            if tag:
                parts.append(f"## {tag} {{#{tag_anchor(self.renderer, tag)}}}")
            if tags.get(tag):
                parts.append(tags[tag])
            for path, method, operation, shared in operations:
                parts.append(self._operation(tag, path, method, operation, shared))
        return title, "\n\n".join(parts) + "\n"

    def _servers(self) -> list[str]:
        if self.swagger2:
            host = as_text(self.spec.get("host"))
            if not host:
                return []
            schemes = self.spec.get("schemes") or ["https"]
            return [
                f"`{scheme}://{host}{as_text(self.spec.get('basePath'))}`"
                for scheme in schemes
                if isinstance(scheme, str)
            ]
        servers = self.spec.get("servers") or []
        return [
            f"`{as_text(s.get('url'))}`" + (f": {inline(s.get('description'))}" if s.get("description") else "")
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
            kind = as_text(scheme.get("type"))
            where = ", ".join(
                f"{key} {as_text(scheme[key])}" for key in ("scheme", "bearerFormat", "in", "name") if scheme.get(key)
            )
            described = f": {inline(scheme.get('description'))}" if scheme.get("description") else ""
            lines.append(f"- `{name}`: {kind}{f' ({where})' if where else ''}{described}")
        return ["Authentication (security schemes):\n" + "\n".join(lines)]

    def _tag_descriptions(self) -> dict[str, str]:
        return {
            as_text(tag.get("name")): as_text(tag.get("description"))
            for tag in self.spec.get("tags") or []
            if isinstance(tag, dict) and tag.get("name")
        }

    def _by_tag(self) -> dict[str, list[tuple[str, str, dict[str, Any], list[Any]]]]:
        """Operations under their first tag ("" for none), the spec's tag order first."""
        groups: dict[str, list[tuple[str, str, dict[str, Any], list[Any]]]] = {
            tag: [] for tag in self._tag_descriptions()
        }
        untagged = "" if self.renderer == "redoc" else UNTAGGED  # Redoc has no group for them
        for path, item in (self.spec.get("paths") or {}).items():
            item, _, _ = self.resolve(item)
            if not isinstance(item, dict):
                continue
            shared: list[Any] = item["parameters"] if isinstance(item.get("parameters"), list) else []
            for method in METHODS:
                operation = item.get(method)
                if isinstance(operation, dict):
                    tags = [t for t in operation.get("tags") or [] if isinstance(t, str) and t.strip()]
                    groups.setdefault(tags[0].strip() if tags else untagged, []).append(
                        (str(path), method, operation, shared)
                    )
        return {tag: operations for tag, operations in groups.items() if operations}

    # --- one operation -----------------------------------------------------------------

    def _operation(self, tag: str, path: str, method: str, operation: dict[str, Any], shared: list[Any]) -> str:
        anchor = operation_anchor(self.renderer, tag, path, method, operation)
        summary = inline(operation.get("summary"))
        heading = f"{method.upper()} {path}" + (f": {summary}" if summary else "")
        # The endpoint in the text too, not only the heading: an answer quotes text.
        named = (
            f" (operation `{inline(operation.get('operationId'))}`)" if as_text(operation.get("operationId")) else ""
        )
        described = as_text(operation.get("description"))
        if sentence(described) == sentence(summary):  # often the same words twice
            described = ""
        said = " ".join(
            f for f in ["Deprecated." if operation.get("deprecated") else "", sentence(summary), described] if f
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
                chosen[(as_text(param.get("in")), as_text(param.get("name")))] = param  # the operation's own win
        out: dict[str, list[Any]] = {"plain": [], "body": [], "form": []}
        for (where, name), param in chosen.items():
            if where == "body":
                out["body"].append(param)
                continue
            if where == "formData":
                out["form"].append(param)
                continue
            schema = param.get("schema", param)  # Swagger 2 puts the type on the parameter itself
            facts = [where, self.type_of(schema)] + (["required"] if param.get("required") else [])
            out["plain"].append(self.item(name, facts, param, schema))
        return out

    def _request(self, operation: dict[str, Any], parameters: dict[str, list[Any]]) -> list[str]:
        if self.swagger2:
            types = ", ".join(operation.get("consumes") or self.spec.get("consumes") or [])
            for param in parameters["body"]:
                required = ", required" if param.get("required") else ""
                head = f"Request body ({types or 'application/json'}{required}){self.described(param, {})}"
                return [self.with_schema(head, "", param.get("schema"))]
            if parameters["form"]:
                fields = [
                    self.item(as_text(p.get("name")), [self.type_of(p), "required" if p.get("required") else ""], p, p)
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
            head = f"Request body ({media}{required}){self.described(body, {})}"
            parts.append(self.with_schema(head, "", content.get("schema")))
            parts += self._examples(content)
        return parts or [f"Request body{self.described(body, {})}"]

    def _responses(self, operation: dict[str, Any]) -> list[str]:
        responses = operation.get("responses")
        if not isinstance(responses, dict):
            return []
        parts = []
        for status, response in responses.items():
            response, _, _ = self.resolve(response)
            if not isinstance(response, dict):
                continue
            described = sentence(response.get("description"))
            if self.swagger2:
                types = ", ".join(operation.get("produces") or self.spec.get("produces") or [])
                media = f" ({types})" if types and response.get("schema") else ""
                parts.append(
                    self.with_schema(f"Response `{status}`{media}: {described}", "Returns", response.get("schema"))
                )
                if isinstance(response.get("examples"), dict):
                    parts += [self._example_block(value) for value in list(response["examples"].values())[:1]]
                continue
            contents = list(self._content(response))
            if not contents:
                parts.append(f"Response `{status}`: {described}".rstrip(": "))
            for media, content in contents:
                parts.append(
                    self.with_schema(f"Response `{status}` ({media}): {described}", "Returns", content.get("schema"))
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
                lines.append(self.item(name, [self.type_of(schema)], header, schema))
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
        text = value if isinstance(value, str) else _json_start(value)
        if len(text) > MAX_EXAMPLE_CHARS:
            text = text[:MAX_EXAMPLE_CHARS].rsplit("\n", 1)[0] + "\n…"
        language = "" if isinstance(value, str) else "json"
        fence = "`" * max(3, max((len(run) + 1 for run in re.findall(r"`{3,}", text)), default=3))
        return f"Example:\n\n{fence}{language}\n{text}\n{fence}"


def _json_start(value: Any) -> str:
    """`value` as indented JSON, written only as far as an example is shown (a big example is not
    dumped whole for its first 1,500 characters)."""
    written: list[str] = []
    size = 0
    for piece in json.JSONEncoder(indent=2, ensure_ascii=False, default=str).iterencode(value):
        written.append(piece)
        size += len(piece)
        if size > MAX_EXAMPLE_CHARS:
            break
    return "".join(written)
