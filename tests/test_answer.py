"""Answer checks: citation filtering, uncited and unsupported claims (real model for the
semantic half)."""

from pgcite.answer.checks import AddedCitation, CitationFilter, check_answer, is_refusal, with_added_citations
from pgcite.vocabulary import Passage, SearchHit


def _passage(n: int, content: str, url: str = "") -> Passage:
    hit = SearchHit(id=f"s:p{n}.md#0", source="s", path=f"p{n}.md", url=url, title=f"P{n}", heading="H",
                    breadcrumb=f"P{n} > H", content=content, distance=0.3)
    return Passage(n, hit)


def test_citation_filter_drops_numbers_naming_no_source_even_split_across_pieces():
    f = CitationFilter({1, 2, 3})
    pieces = ["Widgets sink [", "1", "] and float [7", "][2, 9]. More [1", "0] text [3]"]
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "Widgets sink [1] and float [2]. More  text [3]"
    assert f.invalid == [7, 9, 10]


def test_citation_filter_leaves_other_brackets_alone():
    f = CitationFilter({1})
    out = f.feed("Use arr[0] or [see below] [1]") + f.flush()
    assert out == "Use arr[0] or [see below] [1]" and f.invalid == []


def test_refusal_is_recognised_exactly():
    assert is_refusal("Not in the documents.") and is_refusal(" not in the documents ")
    assert not is_refusal("Not in the documents, but widgets sink.")


def test_checks_report_uncited_unsupported_and_foreign_links(embedder):
    passages = [
        _passage(1, "Widgets sink in water because they are made of lead.", "https://w.dev/faq.html"),
        _passage(2, "Run `widget install` on every node. It needs 2 GB of disk."),
    ]
    answer = ("Widgets sink in water because they are made of lead [1]. "
              "Installing needs 2 GB of disk on every node [2]. "
              "Widgets were invented in 1850 by a Danish clockmaker [2]. "
              "They also come in many bright colours today. "
              "Support is at https://evil.example/help [1].")
    checks = check_answer(answer, passages, embedder, invalid=[])
    assert checks.uncited_sentences == ["They also come in many bright colours today."]
    assert [(u.sentence, u.sources) for u in checks.unsupported] == [
        ("Widgets were invented in 1850 by a Danish clockmaker .", (2,)),
        ("They also come in many bright colours today.", ()),  # measured against every source given
        ("Support is at https://evil.example/help .", (1,)),
    ]
    assert checks.foreign_links == ["https://evil.example/help"]
    assert all(u.support < 0.6 for u in checks.unsupported)
    assert checks.added_citations == [] and not checks.passed
    assert "no citation, and no source given supports it (support" in "\n".join(checks.warnings())
    assert not any(w.startswith("no citation: ") for w in checks.warnings())  # said once


def test_an_uncited_claim_a_source_supports_is_cited_for_it(embedder):
    """What a small chat model does (Qwen2.5-Coder-1.5B on the held-out sites): the right sentence,
    no number. pgcite cites the source that supports it, where the sentence ends."""
    passages = [
        _passage(1, "Run `widget install` on every node. It needs 2 GB of disk."),
        _passage(2, "Widgets sink in water because they are made of lead."),
    ]
    answer = ("Widgets sink in water, since they are made of lead.\n\n"
              "- Installing needs 2 GB of disk on every node\n"
              "- Each widget is made of lead, so it does not float [2].\n")
    checks = check_answer(answer, passages, embedder, invalid=[])
    assert checks.added_citations == [
        AddedCitation("Widgets sink in water, since they are made of lead.", 2),
        AddedCitation("Installing needs 2 GB of disk on every node", 1),
    ]
    assert checks.uncited_sentences == [] and checks.unsupported == [] and checks.passed
    assert with_added_citations(answer, checks) == (
        "Widgets sink in water, since they are made of lead [2].\n\n"
        "- Installing needs 2 GB of disk on every node [1]\n"
        "- Each widget is made of lead, so it does not float [2].\n")


def test_a_paraphrase_with_no_citation_is_cited_by_meaning(embedder):
    passages = [_passage(1, "Run `widget install` on every node."),
                _passage(2, "Widgets sink in water because they are made of lead.")]
    answer = "Since lead is their material, widgets do not float."
    checks = check_answer(answer, passages, embedder, invalid=[])
    assert checks.added_citations == [AddedCitation(answer, 2)] and checks.passed
    assert with_added_citations(answer, checks) == "Since lead is their material, widgets do not float [2]."


def test_a_paraphrase_is_supported_semantically(embedder):
    passages = [_passage(1, "Widgets sink in water because they are made of lead.")]
    checks = check_answer("Since lead is their material, widgets do not float [1].", passages, embedder, [])
    assert checks.unsupported == [] and checks.uncited_sentences == []


# An answer that writes its claims as list items and table rows, each cited at its end.
_WIDGET_PASSAGES = [
    _passage(1, "Widgets sink in water because they are made of lead. Install them with `widget install` "
                "on every node of the cluster."),
    _passage(2, "| Option | Meaning |\n|---|---|\n| `--port` | The port the widget server listens on. "
                "The default port is 8000. |"),
]


def test_list_items_and_table_rows_that_end_with_a_citation_are_cited(embedder):
    answer = ("Widgets need some care:\n\n"
              "- Widgets sink in water because they are made of lead [1]\n"
              "- Install widgets with `widget install`. Run it on every node of the cluster [1].\n"
              "- Install them with `widget install` on every node\n"
              "  of the cluster, as the guide says [1].\n\n"
              "| Option | Meaning of the option here |\n|---|---|\n"
              "| `--port` | The port the widget server listens on. The default port is 8000 [2] |\n")
    checks = check_answer(answer, _WIDGET_PASSAGES, embedder, invalid=[])
    assert checks.uncited_sentences == []


def test_a_list_item_or_table_row_without_a_citation_no_source_supports_is_still_reported(embedder):
    answer = ("- Widgets sink in water because they are made of lead [1]\n"
              "- Widgets also glow softly in the dark at night\n\n"
              "| Option | Meaning |\n|---|---|\n"
              "| `--port` | The port the widget server listens on [2] |\n"
              "| `--colour` | Paints every widget bright orange before shipping |\n")
    checks = check_answer(answer, _WIDGET_PASSAGES, embedder, invalid=[])
    assert checks.uncited_sentences == [
        "Widgets also glow softly in the dark at night",
        "`--colour` | Paints every widget bright orange before shipping",
    ]
    assert checks.added_citations == [] and not checks.passed


# What Qwen2.5-Coder-1.5B wrote on the held-out sites' tune halves that shared words let through,
# told again about widgets: a detail made up around the section's words, the section's "not"
# dropped, a yes that only restates the question, a source chosen for one shared word, and an
# answer that is all invented code.

_RELEASES = [
    _passage(1, "Set `preferred-dark-theme` in `book.toml` to choose the dark theme. Builds take five seconds."),
    _passage(2, "Widget upcasters work on the JSON form, so they don't apply to binary widgets. Add a new "
                "widget type for each version instead."),
]


def test_a_claim_naming_what_its_source_does_not_is_unsupported_whatever_words_it_shares(embedder):
    answer = ("Set the `preferred-dark-theme` option in your `config.toml` file [1]. "
              "Set `preferred-dark-theme` in `book.toml` to choose the dark theme [1]. "
              "A build takes 5 seconds [1]. A build takes 12 seconds [1].")
    checks = check_answer(answer, _RELEASES, embedder, invalid=[])
    assert [(u.sentence, u.why) for u in checks.unsupported] == [
        ("Set the `preferred-dark-theme` option in your `config.toml` file .",
         "it names `config.toml`, which the sources do not"),
        ("A build takes 12 seconds .", "it names `12`, which the sources do not"),
    ]
    assert "(it names `config.toml`, which the sources do not)" in "\n".join(checks.warnings())


def test_a_claim_dropping_its_sources_not_is_unsupported_and_one_keeping_it_is_not(embedder):
    kept = check_answer("Upcasters don't apply to binary widgets [2].", _RELEASES, embedder, invalid=[])
    assert kept.passed
    dropped = check_answer("Your existing upcasters apply to binary widgets too [2].", _RELEASES, embedder, [])
    assert [(u.sources, u.why) for u in dropped.unsupported] == [((2,), "it says the opposite of the source")]
    # Uncited, it is not cited for the source it contradicts.
    uncited = check_answer("Your existing upcasters apply to binary widgets too.", _RELEASES, embedder, [])
    assert uncited.added_citations == [] and uncited.uncited_sentences and not uncited.passed


def test_a_verdict_that_only_restates_the_question_is_not_a_checked_claim(embedder):
    question = "Do existing upcasters work with binary widgets?"
    verdict = check_answer("Yes, existing upcasters work with binary widgets [2].", _RELEASES, embedder, [],
                           question=question)
    assert [(u.sentence, u.why) for u in verdict.unsupported] == [
        ("Yes, existing upcasters work with binary widgets .", "it only restates the question")]
    said = check_answer("No: add a new widget type for each version instead [2].", _RELEASES, embedder, [],
                        question=question)
    assert said.passed


def test_an_uncited_claim_is_not_cited_for_a_source_sharing_one_word():
    passages = [_passage(1, "Check the header."), _passage(2, "Widgets float on mercury.")]
    checks = check_answer("You never need to check anything else.", passages, _NoEmbedder(), [])
    assert checks.added_citations == [] and checks.uncited_sentences == ["You never need to check anything else."]


def test_an_answer_with_nothing_to_check_does_not_pass_unless_a_source_gives_its_code(embedder):
    invented = "```sh\nnpm install @widgets/plugin-glow\n```"
    checks = check_answer(invented, _RELEASES, embedder, [])
    assert checks.nothing_checked and not checks.passed
    assert "nothing to check" in checks.warnings()[0]
    given = [_passage(1, "Install it:\n\n```sh\nnpm install @widgets/plugin-glow\n```")]
    assert check_answer(invented + "\n[1]", given, embedder, []).passed


def test_a_list_item_ending_in_a_lead_in_is_checked_without_it(embedder):
    answer = "1. **Install**: first, install the glow plugin for widgets [1]. Run this command:\n\n   ```sh\n   x\n   ```\n"
    supported = [_passage(1, "Install the glow plugin for widgets to make them glow.")]
    assert check_answer(answer, supported, embedder, []).passed
    assert not check_answer(answer, _RELEASES, embedder, []).passed


class _NoEmbedder:
    """Where no sentence reaches the semantic measure, nothing is embedded."""

    def embed_documents(self, texts):
        raise AssertionError(f"embedded {texts}")


def test_a_package_to_install_that_no_source_names_is_reported(embedder):
    """Invented on the held-out sites: `npm install @docusaurus/plugin-giscus`, a name anybody could publish."""
    passages = [_passage(1, "Comments come from giscus. Install `@giscus/react` and wrap the blog post item.")]
    answer = ("Install the giscus component for the blog post item [1].\n\n"
              "```sh\nnpm install --save @giscus/react @docusaurus/plugin-giscus@3\n```\n")
    checks = check_answer(answer, passages, embedder, [])
    assert checks.foreign_packages == ["@docusaurus/plugin-giscus"] and not checks.passed
    assert ("package to install that no source names (check it exists and is the right one): "
            "@docusaurus/plugin-giscus") in checks.warnings()


def test_only_a_no_makes_the_second_reading_doubt_a_claim():
    from pgcite.answer.verify import says_no

    assert says_no("No") and says_no(" no.") and says_no("**No**, it says 400") and says_no("<think>hmm</think>\nNo")
    assert not any(says_no(r) for r in ("Yes", "yes.", "", "Not sure", "<think>no idea", "The sections say no"))


def test_a_sentence_quoted_from_an_item_whose_other_sentence_says_not_is_not_the_opposite():
    """Seen with pgcite's Slack page: the quoted sentence met the whole list item, whose second
    sentence says "not", and was called a contradiction."""
    item = "- **Limits.** A question is at most 4,000 characters. A longer one is not answered and gets a reply."
    checks = check_answer("A question is at most 4,000 characters [1].", [_passage(1, item)], _NoEmbedder(), [])
    assert checks.passed and checks.unsupported == []


def test_every_sentence_of_pgcites_own_docs_quoted_with_its_section_passes_the_checks():
    """The offline generator quotes its sources: a quote must never be called unsupported."""
    from pathlib import Path

    from pgcite.answer.claims import split_claims

    docs = sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md"))
    failed, quoted = [], 0
    for page in docs:
        for section in page.read_text(encoding="utf-8").split("\n## "):
            for claim in split_claims(section):
                if "[" in claim:  # a quote's own brackets read as citations
                    continue
                quoted += 1
                cited = f"{claim[:-1]} [1]{claim[-1]}" if claim[-1] in ".!?" else f"{claim} [1]"
                checks = check_answer(cited, [_passage(1, section)], _NoEmbedder(), [])
                failed += [(page.name, u.sentence[:80], u.why) for u in checks.unsupported]
    assert quoted > 1000 and failed == []


def test_an_answer_lists_each_cited_section_once_in_the_order_it_is_first_cited():
    from pgcite.answer.checks import Checks
    from pgcite.answer.flow import Answer
    from pgcite.vocabulary import Usage

    one, two, three = _passage(1, "Widgets sink."), _passage(2, "Gears turn."), _passage(3, "Widgets float.")
    three = Passage(3, one.hit.__class__(**{**one.hit.__dict__, "id": "s:p1.md#1", "content": "Widgets float."}))
    answer = Answer("q", "Gears turn [2]. Widgets sink [1] and float [3].", False, "extractive", [1, 2, 3],
                    [one, two, three], [], Checks(), Usage())
    assert [(numbers, hit.path) for numbers, hit in answer.cited_sections()] == [((2,), "p2.md"), ((1, 3), "p1.md")]
    assert Answer("q", "Not in the documents.", True, "extractive", [], [one], [], Checks(), Usage()).cited_sections() == []
