"""Language tags as sites name them: folder names (`fr`, `pt-br`, `zh-Hans`) and configuration
values (`en-US`, `zh_CN`) normalised to lower-case BCP 47, and only when the primary subtag is a
real ISO 639-1 language, so a folder called `guides` or `api` is never taken for one."""

from __future__ import annotations

import re

__all__ = ["ISO_639_1", "language_tag", "primary"]

ISO_639_1 = frozenset(
    """aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy
    da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy
    hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li
    ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa
    pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th
    ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu""".split()
)
_TAG = re.compile(r"(?P<primary>[a-z]{2})(?:[-_](?P<rest>[a-z0-9]{2,8}(?:[-_][a-z0-9]{1,8})*))?", re.IGNORECASE)


def language_tag(name: object) -> str | None:
    """`name` as a lower-case BCP 47 tag ("pt_BR" -> "pt-br"), or None when it is not one."""
    if not isinstance(name, str):
        return None
    match = _TAG.fullmatch(name.strip())
    if not match or match["primary"].lower() not in ISO_639_1:
        return None
    return name.strip().lower().replace("_", "-")


def primary(tag: str) -> str:
    """The language of a tag without its region or script: "pt-br" -> "pt"."""
    return tag.split("-", 1)[0]
