"""Hugo's project configuration as Hugo reads it (hugo.* or config.* at the root, then the config
directory `config/_default` and `config/production`, keys case-insensitive) and what it says about
content: the content roots (module mounts, else `contentDir` per language) and the languages."""

from __future__ import annotations

import json
import posixpath
import tomllib
from dataclasses import dataclass, field
from typing import Any

import yaml

from pgcite.ingest import bounded_yaml
from pgcite.ingest.sites.base import Files
from pgcite.ingest.sites.languages import language_tag

__all__ = ["CONFIG_FILES", "HugoConfig", "Root", "read_config"]

CONFIG_FILES = tuple(f"{stem}.{ext}" for stem in ("hugo", "config") for ext in ("toml", "yaml", "yml", "json"))
# `hugo build` merges config/_default, then the production environment's folder, over the root file.
CONFIG_DIRS = ("config/_default", "config/production")
# Files of a config folder named after the root key they hold (the ones read here).
_KEY_FILES = ("languages", "module", "params", "cascade")


@dataclass(frozen=True)
class Root:
    """A folder (or one file) mounted into the content tree."""

    source: str  # site path of the mounted folder or file
    target: str  # where it sits in the content tree: "" (the root), "blog", or "_index.md" for a file
    language: str = ""  # tag of the language it holds; "" when file names say (else the default)
    excluded: tuple[str, ...] = ()  # globs relative to `source` the mount leaves out


@dataclass(frozen=True)
class HugoConfig:
    base_url: str = ""
    roots: tuple[Root, ...] = (Root("content", ""),)
    languages: tuple[str, ...] = ()  # tags, the default first; () when the configuration names none
    default_language: str = ""  # tag; "" when the configuration names none
    prefixes: dict[str, str] = field(default_factory=dict)  # tag -> its URL folder ("" for none)
    suffixes: dict[str, str] = field(default_factory=dict)  # file name suffix ("fr") -> tag
    ugly: bool | dict[str, bool] = False  # uglyURLs: for the whole site or per top-level section
    lower: bool = True  # not disablePathToLower
    drafts: bool = False  # buildDrafts
    params: dict[str, Any] = field(default_factory=dict)
    cascade: tuple[dict[str, Any], ...] = ()
    themes: tuple[str, ...] = ()
    math: tuple[tuple[str, str], ...] = ()  # goldmark passthrough block delimiters, when enabled
    problems: tuple[str, ...] = ()  # configuration files left out, one line each

    def ugly_for(self, section: str) -> bool:
        if isinstance(self.ugly, dict):
            return bool(self.ugly.get(section.lower(), False))
        return self.ugly


def _load(name: str, text: str, problems: list[str]) -> dict[str, Any]:
    try:
        if name.endswith(".toml"):
            data: object = tomllib.loads(text)
        elif name.endswith(".json"):
            data = json.loads(text)
        else:
            data = bounded_yaml.load(text)  # lower_keys walks it all: a "billion laughs" would fill memory
    except bounded_yaml.Refused as err:
        problems.append(f"{name} left out: {err}")
        return {}
    except (tomllib.TOMLDecodeError, ValueError, yaml.YAMLError, RecursionError):
        return {}
    return lower_keys(data) if isinstance(data, dict) else {}


def lower_keys(value: Any) -> Any:
    """Hugo's configuration and front matter keys are case-insensitive: all lower-cased."""
    if isinstance(value, dict):
        return {str(k).lower(): lower_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [lower_keys(v) for v in value]
    return value


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        merged[key] = _merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def _read_first(files: Files, names: tuple[str, ...], problems: list[str]) -> dict[str, Any] | None:
    for name in names:
        try:
            return _load(name, files.read(name), problems)
        except OSError:
            continue
    return None


def load_config(files: Files, problems: list[str]) -> dict[str, Any]:
    """The merged configuration, every key lower-cased ({} when there is none); a file refused is
    left out, and said in `problems`."""
    config = _read_first(files, CONFIG_FILES, problems) or {}
    exts = ("toml", "yaml", "yml", "json")
    for folder in CONFIG_DIRS:
        for stem in ("hugo", "config"):
            config = _merge(config, _read_first(files, tuple(f"{folder}/{stem}.{e}" for e in exts), problems) or {})
        for key in _KEY_FILES:
            data = _read_first(files, tuple(f"{folder}/{key}.{e}" for e in exts), problems)
            if data is None:
                continue
            # The root key is unwrapped when it is the file's only key (`[module]` in module.toml).
            value = data[key] if list(data) == [key] else data
            config = _merge(config, {key: value})
    return config


def _tag(key: str) -> str:
    """A language key as a tag: normalised when it is one, else kept lower-case (Hugo accepts
    private-use keys such as `hugolang`)."""
    return language_tag(key) or key.strip().lower()


def _languages(config: dict[str, Any]) -> tuple[list[str], dict[str, dict[str, Any]], str]:
    """(enabled language keys in Hugo's order, their settings, the default key)."""
    table = config.get("languages")
    table = table if isinstance(table, dict) else {}
    disabled = {str(k).lower() for k in config.get("disablelanguages") or [] if isinstance(k, str)}
    settings = {
        str(k): (v if isinstance(v, dict) else {})
        for k, v in table.items()
        if str(k) not in disabled and not (isinstance(v, dict) and v.get("disabled") is True)
    }
    default = str(config.get("defaultcontentlanguage") or "en").lower()

    def order(key: str) -> tuple[int, int, str]:
        weight = settings[key].get("weight")
        weight = weight if isinstance(weight, int) and weight else 0
        return (0 if weight else 1, weight, key)  # non-zero weights first, ascending, then by key

    keys = sorted(settings, key=order)
    return keys, settings, default


def _mount_language(mount: dict[str, Any]) -> str:
    lang = mount.get("lang")
    if isinstance(lang, str) and lang:
        return lang.lower()
    matrix = (mount.get("sites") or {}).get("matrix") if isinstance(mount.get("sites"), dict) else None
    names = matrix.get("languages") if isinstance(matrix, dict) else None
    if isinstance(names, str):
        names = [names]
    if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str) and not set("*?[{!") & set(names[0]):
        return names[0].lower()
    return ""  # several languages, or a pattern: each file's name says


def _mount_excludes(mount: dict[str, Any]) -> tuple[str, ...]:
    """The globs a mount leaves out: `excludeFiles`, and the `! ` entries of `files`."""
    found: list[str] = []
    for key, negated_only in (("excludefiles", False), ("files", True)):
        value = mount.get(key)
        for item in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if not isinstance(item, str):
                continue
            if negated_only:
                if not item.lstrip().startswith("!"):
                    continue
                item = item.lstrip()[1:]
            found.append(item.strip().lstrip("/"))
    return tuple(g for g in found if g)


def _content_roots(config: dict[str, Any], keys: list[str], settings: dict[str, dict[str, Any]]) -> list[Root]:
    module = config.get("module") if isinstance(config.get("module"), dict) else {}
    mounts = [m for m in (module or {}).get("mounts") or [] if isinstance(m, dict)]
    roots: list[Root] = []
    for mount in mounts:
        source, target = str(mount.get("source") or ""), str(mount.get("target") or "").strip("/")
        if target != "content" and not target.startswith("content/"):
            continue
        if not source or posixpath.isabs(source) or mount.get("disabled") is True:
            continue  # a module's or an absolute folder: not part of what is ingested
        roots.append(
            Root(
                posixpath.normpath(source),
                target[len("content/") :] if "/" in target else "",
                _mount_language(mount),
                _mount_excludes(mount),
            )
        )
    if roots:  # a content mount replaces the default one (Hugo: "removes the default mount")
        return _merge_roots(roots)
    default_dir = str(config.get("contentdir") or "content").strip("/") or "content"
    own = {k: str(settings[k]["contentdir"]).strip("/") for k in keys if settings.get(k, {}).get("contentdir")}
    roots = [Root(folder, "", key.lower()) for key, folder in own.items()]
    if len(own) < max(len(keys), 1):  # some language (or the only one) keeps the shared folder
        roots.append(Root(default_dir, ""))
    return _merge_roots(roots)


def _merge_roots(roots: list[Root]) -> list[Root]:
    """One root per mounted folder: a folder several languages share is read by file name."""
    by_source: dict[tuple[str, str], Root] = {}
    for root in roots:
        key = (root.source, root.target)
        old = by_source.get(key)
        if old is not None and old.language != root.language:
            root = Root(root.source, root.target, "", old.excluded)
        by_source[key] = root
    return list(by_source.values())


def read_config(files: Files) -> HugoConfig:
    problems: list[str] = []
    config = load_config(files, problems)
    keys, settings, default = _languages(config)
    named = bool(keys) or "defaultcontentlanguage" in config
    keys = [default, *(k for k in keys if k != default)]  # the default first, configured or not
    multilingual = len(keys) > 1
    in_subdir = config.get("defaultcontentlanguageinsubdir") is True
    prefixes = {_tag(k): (k.lower() if multilingual and (k != default or in_subdir) else "") for k in keys}
    roots = [
        Root(r.source, r.target, _tag(r.language) if r.language else "", r.excluded)
        for r in _content_roots(config, keys, settings)
        if not r.language or r.language in {k.lower() for k in keys}  # a disabled language's mount: not built
    ]
    ugly = config.get("uglyurls")
    params = config.get("params")
    cascade = config.get("cascade")
    theme = config.get("theme")
    passthrough = _dig(config, "markup", "goldmark", "extensions", "passthrough")
    blocks = (
        _dig(passthrough, "delimiters", "block")
        if isinstance(passthrough, dict) and passthrough.get("enable")
        else None
    )
    return HugoConfig(
        base_url=str(config.get("baseurl") or ""),
        roots=tuple(roots),
        languages=tuple(_tag(k) for k in keys) if named else (),
        default_language=_tag(default) if named else "",
        prefixes=prefixes,
        suffixes={k.lower(): _tag(k) for k in keys},
        ugly={str(k).lower(): v is True for k, v in ugly.items()} if isinstance(ugly, dict) else ugly is True,
        lower=config.get("disablepathtolower") is not True,
        drafts=config.get("builddrafts") is True,
        params=params if isinstance(params, dict) else {},
        cascade=tuple(c for c in (cascade if isinstance(cascade, list) else [cascade]) if isinstance(c, dict)),
        themes=tuple(t for t in ([theme] if isinstance(theme, str) else theme or []) if isinstance(t, str)),
        math=tuple(
            (str(p[0]), str(p[1])) for p in blocks or [] if isinstance(p, list) and len(p) == 2 and p[0] and p[1]
        ),
        problems=tuple(problems),
    )


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value
