"""YAML read with its aliases bounded. `yaml.safe_load` shares an aliased node rather than
copying it, so a 1 KB "billion laughs" (ten anchors each aliasing the one before ten times) loads
small; but whatever then walks the result (a JSON dump of an example, a list of enum values, a
description made text) walks every alias as a copy, and 10^10 copies take all the memory there
is. So the document is composed first, the nodes it holds once every alias is expanded are
counted (each shared node once, in one pass), and a document over the bound, or one whose alias
holds itself, is refused in one line before anything is built from it.

Every YAML pgcite reads goes through `load`: OpenAPI files, site configurations (mkdocs.yml with
its own tags, Hugo's, .readthedocs.yaml) and front matter, each with the loader class it needs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

__all__ = ["MAX_ALIASED_NODES", "Refused", "TooManyAliases", "load"]

# What aliases may add to a document: more nodes than a 5 MB file holds written out, far fewer
# than a walk over them would take memory or minutes for.
MAX_ALIASED_NODES = 1_000_000


class Refused(ValueError):
    """A document pgcite will not build (the message says why, in one line)."""


class TooManyAliases(Refused):
    """A "billion laughs": where the format has a way to share parts (OpenAPI's $ref), say it."""


def load(text: str, loader_class: Callable[[str], Any] = yaml.SafeLoader) -> Any:
    """The YAML document `text`, as `loader_class` (a safe loader: yaml.SafeLoader, libyaml's
    CSafeLoader, or a subclass with tags of its own) reads it; Refused (one line) when its aliases
    expand past MAX_ALIASED_NODES nodes, an alias holds itself, or it nests deeper than the parser
    goes. yaml.YAMLError when it is not YAML."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except RecursionError:  # the composer and constructor recurse once a level
        raise Refused("nested deeper than pgcite reads YAML (hundreds of levels)") from None
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Count the nodes `root` holds with every alias written out (without writing any out): each
    distinct node's expanded size is worked out once, depth first without recursion."""
    size: dict[int, int] = {}  # id(node) -> nodes it holds expanded, itself included
    open_nodes: set[int] = set()  # on the path from the root: an alias to one of them holds itself
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            open_nodes.discard(key)
            distinct += 1
            continue
        if key in size:
            continue  # an alias to a node already counted: its size is known
        if key in open_nodes:
            raise Refused("a YAML alias refers to a node that holds it, so it never ends: write it out")
        open_nodes.add(key)
        stack.append((node, True))
        stack += [(child, False) for child in _children(node) if id(child) not in size]
    if size[id(root)] - distinct > MAX_ALIASED_NODES:
        raise TooManyAliases(
            f"its YAML aliases expand to over {MAX_ALIASED_NODES:,} nodes more than it holds (a 'billion "
            "laughs'): write the repeated parts out"
        )
