"""ExtractiveEngine: essences, concepts, threads, digests, summaries, assessments."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context.tokens import count_tokens
from selene_dag.llm.engine import Engine, EngineUnavailable
from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.text import split_sentences, strip_markdown

NOTE = """# Avoiding length errors

I was using the Apache Bench `ab` command against [Datasette](https://datasette.io/) and saw
many failed requests:

```
Failed requests:        953
```

It turns out Apache Bench counts a response as a length error when its size differs from the
first response. The fix is to pass the -l option, which accepts variable document lengths.
See https://example.com/docs for more.
"""


def test_engine_satisfies_the_protocol() -> None:
    engine = ExtractiveEngine()
    assert isinstance(engine, Engine)
    assert engine.name == "extractive" and engine.model


def test_strip_markdown_removes_callout_types_and_logseq_macros() -> None:
    # A runbook's essence opened "[!warning]…", a dashboard page's was its {{query …}}.
    text = "> [!warning]- Before deploy\n> Drain the queue.\n\n{{query (todo now)}}\nDone."
    assert strip_markdown(text) == "Before deploy Drain the queue.\n\nDone."
    # An Org task's planning line is its dates, not its prose (an essence opened with one).
    org = "Renew the TLS certificate.\nCLOSED: [2025-11-04 Tue 09:12] SCHEDULED: <2025-11-03 Mon>"
    assert strip_markdown(org) == "Renew the TLS certificate."
    assert strip_markdown("SCHEDULED: the talk is at noon.") == "SCHEDULED: the talk is at noon."
    # A template's braces in a note about Jinja are its text.
    assert strip_markdown("Use {{ row.name }} or {{x}}.") == "Use {{ row.name }} or {{x}}."


def test_strip_markdown_removes_code_urls_and_link_syntax() -> None:
    prose = strip_markdown(NOTE)
    assert "953" not in prose
    assert "https://" not in prose
    assert "[Datasette]" not in prose and "Datasette" in prose
    assert "#" not in prose
    assert len(split_sentences(prose)) >= 3


def test_a_title_before_a_name_ends_no_sentence() -> None:
    # An essence began "Okafor agreed to be first author" and the note's theme was "dr".
    text = "Met Dr. Okafor about the methods paper. Dr. Okafor agreed to be first author."
    assert split_sentences(text) == [
        "Met Dr. Okafor about the methods paper.",
        "Dr. Okafor agreed to be first author.",
    ]
    assert split_sentences("Ask Prof. Lee. Then Mrs. Park.") == [
        "Ask Prof. Lee.",
        "Then Mrs. Park.",
    ]
    analysis = ExtractiveEngine().analyze_note("Methods paper", text)
    assert not analysis.essence.startswith("Okafor")
    assert "dr" not in analysis.concepts


def test_a_sentence_keeps_its_closing_quote_and_an_elision_ends_none() -> None:
    # The closing quote or bracket after a sentence's period was dropped, and an ellipsis
    # inside code's brackets ended a sentence: an essence opened "TO 'out.parquet' …".
    assert split_sentences('He said "stop." Then he left (at once.) Fine.') == [
        'He said "stop."',
        "Then he left (at once.)",
        "Fine.",
    ]
    code = "Run COPY (SELECT ...) TO 'out.parquet' (FORMAT parquet) to export. Then load it."
    assert split_sentences(code)[0].endswith("(FORMAT parquet) to export.")
    assert split_sentences("Wait... Then it worked.") == ["Wait...", "Then it worked."]
    assert split_sentences("a. b! c? d", boundary="any") == ["a.", "b!", "c?", "d"]


def test_other_scripts_stops_end_sentences() -> None:
    # No capital follows a Chinese or Devanagari stop, and no space: a paragraph of them
    # was one sentence (an essence of a whole paragraph, a digest never three sentences).
    assert split_sentences("我们去了北京。天气很好！「好。」然后") == [
        "我们去了北京。",
        "天气很好！",
        "「好。」",
        "然后",
    ]
    assert split_sentences("गाइड राजेश था। कोड DEL-7712 है।", boundary="any") == [
        "गाइड राजेश था।",
        "कोड DEL-7712 है।",
    ]


def test_a_sentence_closed_by_a_quote_gets_no_second_stop() -> None:
    # Sentences keep their closing quote: ensure_period added a stop after it ('0.".').
    from selene_dag.llm.extractive.essence import pick_essence
    from selene_dag.text import ensure_period

    assert ensure_period('he said "stop."') == 'he said "stop."'
    assert ensure_period("(at once.)") == "(at once.)" and ensure_period("plain") == "plain."
    # Other scripts' stops end a sentence too (an essence ended "…है।." and "８０８０．.").
    for ended in ("गाइड राजेश था।", "ポートは８０８０．", "这是什么？", "ما هذا؟", "Բարեւ։", "ሰላም።"):
        assert ensure_period(ended) == ended
    essence = pick_essence(
        "Postgres retries",
        'The config said "retries: 0." Then we set the retries to three as the runbook says. '
        "It worked after that and the alerts stopped firing.",
    )
    assert '0."' in essence and '0.".' not in essence


def test_a_decision_is_what_a_meeting_note_comes_down_to() -> None:
    # A line its author labels as the outcome lost to the attendees and a to-do.
    meeting = (
        "Attendees: Ana Lopez, Bo Chen, Chen Wu, Dana Smith and the platform team from "
        "Berlin.\n\nDecision: the postgres 16 upgrade goes out on Thursday.\n\nBo owns the "
        "rollback plan for the primary cluster. Chen checks the replicas first thing in the "
        "morning."
    )
    assert (
        "Decision: the postgres 16 upgrade"
        in ExtractiveEngine().analyze_note("Meeting 2025-11-03", meeting).essence
    )
    # "Resolution:" is a field of tech notes (a monitor's), not an outcome; labels are
    # read at a sentence's start only.
    from selene_dag.llm.extractive.essence import _LABELLED

    assert _LABELLED.match("Resolution: 3840x2160 at 60 Hz") is None
    assert _LABELLED.match("Key takeaway: pin the version") is not None
    assert _LABELLED.match("The outcome: nothing") is None


def test_essence_is_a_central_sentence_of_the_prose() -> None:
    analysis = ExtractiveEngine().analyze_note("Avoiding length errors in Apache Bench", NOTE)
    assert len(analysis.essence) > 10
    assert "Apache Bench" in analysis.essence or "-l option" in analysis.essence
    assert "```" not in analysis.essence and "http" not in analysis.essence
    assert 1 <= len(analysis.concepts) <= 5
    assert all(c == c.lower() and c.strip() for c in analysis.concepts)
    assert analysis.primary_theme in analysis.concepts
    assert any("apache" in c or "bench" in c for c in analysis.concepts)


def test_a_note_without_prose_is_said_by_its_table_or_its_code() -> None:
    # Its essence was its title ("Subscriptions."), which told a model nothing the title
    # line does not: a table's columns and first rows, a code block's language and lines.
    table = (
        "# Subscriptions\n\n| Service | Monthly |\n|---|---|\n| Netflix | 15.49 |\n"
        "| Spotify | 10.99 |\n"
    )
    essence = ExtractiveEngine().analyze_note("Subscriptions", table).essence
    assert essence == "Subscriptions: Service, Monthly — Netflix 15.49; Spotify 10.99."
    code = "```bash\n# each file\nfor f in *; do echo $f; done\n```"
    essence = ExtractiveEngine().analyze_note("Bash loop over files", code).essence
    assert essence == "Bash loop over files (bash): for f in *; do echo $f; done"
    # A wide table is cut to a sentence's room; CSS's "* {" is no comment.
    wide = "| " + " | ".join(f"Column {i}" for i in range(80)) + " |\n|" + "---|" * 80 + "\n"
    wide += "| " + " | ".join(str(i) for i in range(80)) + " |\n"
    assert len(ExtractiveEngine().analyze_note("Wide", wide).essence) <= 260
    css = ExtractiveEngine().analyze_note("CSS reset", "```css\n* { margin: 0; }\n```").essence
    assert css == "CSS reset (css): * { margin: 0; }"
    # With neither, the title, made long enough.
    assert ExtractiveEngine().analyze_note("Bash loop", "```\n```").essence == (
        "A short note: Bash loop."
    )
    short = ExtractiveEngine().analyze_note("ab", "")
    assert len(short.essence) > 10


def test_a_huge_paragraph_after_a_heading_gets_an_essence_from_its_words() -> None:
    # Beyond ANALYSIS_MAX_CHARS a note is analysed on its beginning, cut at a line break:
    # for a heading and then one pasted line of 400,000 words, that left the heading alone
    # and the essence said "A short note: Huge line.".
    from selene_dag.llm.extractive.essence import ANALYSIS_MAX_CHARS, analyze_note

    words = " ".join(f"replica{i % 50} lag" for i in range(40_000))
    content = "# Huge line\n\n" + words
    assert len(content) > ANALYSIS_MAX_CHARS
    essence = analyze_note("Huge line", content, 5)["essence"]
    assert not essence.startswith("A short note") and "replica" in essence


def test_a_concept_or_theme_is_at_most_a_few_words_long() -> None:
    # A note of one giant "word" (a hash, a blob with no space) got it as its concept and
    # theme, 5,000 characters; a model's answer is cut to 60.
    from selene_dag.llm.engine import MAX_CONCEPT_CHARS

    analysis = ExtractiveEngine().analyze_note("Blob", "x" * 5000 + " and a few words after it")
    assert analysis.concepts and all(len(c) <= MAX_CONCEPT_CHARS for c in analysis.concepts)
    assert len(analysis.primary_theme) <= MAX_CONCEPT_CHARS


def test_analysis_is_deterministic_and_cached() -> None:
    engine = ExtractiveEngine()
    first = engine.analyze_note("Title", NOTE)
    second = engine.analyze_note("Title", NOTE)
    assert first == second == ExtractiveEngine().analyze_note("Title", NOTE)
    assert (engine.calls_made, engine.calls_cached) == (1, 1)


def test_bad_input_is_rejected() -> None:
    engine = ExtractiveEngine()
    with pytest.raises(TypeError):
        engine.analyze_note(None, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        engine.analyze_note("  ", "")
    with pytest.raises(ValueError):
        engine.summarize("text", 0)
    with pytest.raises(ValueError):
        engine.summarize("text", 5, kind="poem")
    with pytest.raises(ValueError):
        engine.digest_thread("name", "why", ["", " "])
    with pytest.raises(ValueError):
        engine.detect_threads("", [{"title": "no id"}])


def test_answer_needs_a_model() -> None:
    with pytest.raises(EngineUnavailable, match="SELENE_LLM=ollama"):
        ExtractiveEngine().answer("why?", "context")


def test_digest_has_three_to_five_sentences() -> None:
    essences = [
        "Time-blocking felt too rigid for deep work.",
        "Body doubling works well for long focus sessions.",
        "A visible timer keeps me honest about breaks.",
        "Mornings are best for writing; meetings go after lunch.",
        "Weekly reviews catch the tasks that slipped.",
        "Short walks reset attention better than coffee.",
    ]
    digest = ExtractiveEngine().digest_thread("Focus systems", "Need structure", essences)
    assert len(digest) >= 30
    assert 3 <= len(split_sentences(digest)) <= 5
    assert "Focus systems" in digest
    one = ExtractiveEngine().digest_thread("Solo", "Why it matters", ["Only one essence here."])
    assert 3 <= len(split_sentences(one)) <= 5


def test_a_digest_of_lower_case_essences_is_still_three_sentences() -> None:
    # Notes written in lower case (or essences that are lines of code): their sentences ran
    # into the one before, and every such thread's digest was rejected as too short.
    from selene_dag.notes.digests import validate_digest

    essences = [
        "pip isn't there as a standalone tool, but python3 -mpip install x will work",
        "retry with backoff when the queue worker sees a flaky lock on postgres",
        "cron jobs on kubernetes need a concurrency policy or they pile up",
        "kafka consumer lag grows at night when the batch jobs run",
    ]
    digest = ExtractiveEngine().digest_thread("python", "", essences)
    assert validate_digest(digest) == digest


def test_summary_fits_the_budget_and_keeps_sentences() -> None:
    engine = ExtractiveEngine(token_model="mistral:7b")
    text = " ".join(strip_markdown(NOTE).split()) * 3
    summary = engine.summarize(text, 30)
    assert 0 < count_tokens(summary, model="mistral:7b") <= 30
    bullets = engine.summarize(
        "[user]: please fix the login bug in auth.py\n"
        "[assistant]: I changed auth.py to refresh the token.\n"
        "[user]: thanks",
        40,
        kind="conversation",
    )
    assert bullets.startswith("- ")
    assert count_tokens(bullets, model="mistral:7b") <= 40


@settings(max_examples=25, deadline=None)
@given(
    text=st.text(min_size=0, max_size=600),
    budget=st.integers(min_value=1, max_value=60),
    model=st.sampled_from(["mistral:7b", "gpt-4o", "gpt-4"]),
)
def test_summary_never_exceeds_budget(text: str, budget: int, model: str) -> None:
    summary = ExtractiveEngine().summarize(text, budget, model=model)
    assert count_tokens(summary, model=model) <= budget


def test_assessment_heuristics_separate_signal_from_chatter() -> None:
    engine = ExtractiveEngine()
    rich = engine.assess_chunk(
        "Traceback: KeyError in selene_dag/store.py line 40\n"
        "```python\nconn.execute('SELECT 1')\n```\n"
        "$ pytest tests/unit -q\n"
        "We decided to retry because the root cause is a lock; the fix is in store.py."
    )
    chatter = engine.assess_chunk("ok\nthanks\nsure\ngreat")
    for a in (rich, chatter):
        for value in (a.relevance, a.signal_density, a.reusability):
            assert 1 <= value <= 10
        assert "\n" not in a.reason and a.reason
    assert rich.signal_density > chatter.signal_density
    assert rich.reusability > chatter.reusability
    assert rich.relevance > chatter.relevance
    on_topic = engine.assess_chunk("The duckdb lock error is fixed", context="duckdb lock")
    off_topic = engine.assess_chunk("The duckdb lock error is fixed", context="css colours")
    assert on_topic.relevance > off_topic.relevance


def test_threads_cluster_notes_by_topic() -> None:
    topics = {
        "sqlite": "SQLite full-text search index with FTS5 tables and triggers",
        "docker": "Docker container image build with a Dockerfile and compose",
        "css": "CSS grid layout with flexbox columns and media queries",
    }
    notes = []
    for topic, text in topics.items():
        for i in range(4):
            notes.append(
                {
                    "id": f"{topic}-{i}",
                    "title": f"{text.split()[0]} trick {i}",
                    "essence": f"{text} number {i}.",
                    "concepts": [topic],
                }
            )
    threads = ExtractiveEngine().detect_threads("", notes)
    assert len(threads) == 3
    for thread in threads:
        prefixes = {nid.split("-")[0] for nid in thread.note_ids}
        assert len(prefixes) == 1 and len(thread.note_ids) == 4
        assert thread.name and thread.why
    assert ExtractiveEngine().detect_threads("", list(reversed(notes))) == threads


def test_engine_label_names_the_engine_get_engine_builds() -> None:
    from selene_dag.config import load_settings
    from selene_dag.llm import get_engine
    from selene_dag.llm.factory import engine_label

    for env in ({"SELENE_LLM": "extractive"}, {"SELENE_LLM": "ollama", "SELENE_MODEL": "qwen3"}):
        settings = load_settings(env)
        engine = get_engine(settings)
        assert engine_label(settings) == f"{engine.name}:{engine.model}"


def test_wikilinks_read_as_their_words_and_the_decision_is_the_essence() -> None:
    wiki = "See [[Idempotency keys]], [[projects/retry/incidents|incidents]]."
    assert strip_markdown(wiki) == "See Idempotency keys, incidents."
    assert strip_markdown("Read [[notes/Plan.md#Goals]] ![[diagram.png]] now.") == "Read Plan now."
    # The links' brackets outweighed the note's decision (a QA vault's design note).
    content = (
        "# Retry policy design\n\n"
        "We decided to use exponential backoff with full jitter, base 200 ms, capped at 30 "
        "seconds, max 6 attempts.\nIdempotency keys are required for POST retries. See "
        "[[Idempotency keys]] and [[projects/retry/incidents|incidents]].\n"
    )
    essence = ExtractiveEngine().analyze_note("Retry policy design", content).essence
    assert essence.startswith("We decided to use exponential backoff") and "[[" not in essence


def test_notes_in_other_scripts_get_a_theme_and_their_words_count() -> None:
    # Words were ASCII only: "Steuererklärung" became "steuererkl rung", a Russian note had
    # no word (no theme, no thread, every sentence too short to be an essence).
    from selene_dag.text import words

    assert words("Die Steuererklärung ist fällig") == ["Die", "Steuererklärung", "ist", "fällig"]
    assert words("Налоговая декларация подана") == ["Налоговая", "декларация", "подана"]
    assert words("税金の申告") == ["税", "金", "の", "申", "告"]  # one word each, as search
    engine = ExtractiveEngine()
    german = engine.analyze_note(
        "Steuererklärung 2024",
        "Die Steuererklärung für 2024 ist bis Juli fällig. Der Steuerberater hat die "
        "Unterlagen bekommen.",
    )
    assert german.primary_theme == "steuererklärung"
    russian = engine.analyze_note(
        "Налоги",
        "Налоговая декларация подана вовремя. Инспектор подтвердил получение документов.",
    )
    assert russian.primary_theme == "налоги" and russian.essence.startswith("Налоговая")
    japanese = engine.analyze_note(
        "税金", "税金の申告は三月です。書類は全部そろっています。税金の書類は箱の中。"
    )
    assert not japanese.essence.endswith("。.")
    # Two characters together are a concept (the language's words); a particle is not.
    assert japanese.primary_theme == "税金" and "書類" in japanese.concepts
    assert not any("の" in c or "は" in c for c in japanese.concepts)


def test_a_thread_digest_says_what_the_newest_note_added() -> None:
    # Three new notes changed a digest's count and nothing else: it quoted the oldest tips.
    from selene_dag.llm.extractive.digest import digest_thread

    essences = [
        f"Kubernetes tip {i}: restart the deployment with kubectl rollout." for i in range(14)
    ]
    essences.append("PodDisruptionBudgets keep two replicas up while the nodes drain.")
    digest = digest_thread("kubernetes", "", essences)
    assert "PodDisruptionBudgets keep two replicas up" in digest
    assert digest.startswith("The thread “kubernetes” brings together 15 notes")


def test_a_digest_names_its_thread_by_topics_not_by_what_the_notes_say_was_done() -> None:
    # Essences are often "I decided to…" sentences: counted over a thread, the verb
    # outnumbered its topics ("24 notes about model, decided and python").
    from selene_dag.llm.extractive.digest import digest_thread
    from selene_dag.llm.extractive.phrases import key_phrases

    essences = [
        "I decided to run the model locally with llama.cpp.",
        "I figured out how to quantize the model weights.",
        "I decided the GPU offload was worth it for the model.",
        "I realized the context length limits the model.",
        "I decided to keep the prompt cache on disk.",
    ]
    opening = digest_thread("llms", "", essences).split(".")[0]
    assert "model" in opening
    assert not {"decided", "figured", "realized"} & set(opening.replace(",", " ").split())
    assert key_phrases("Notes", "We decided. We decided. We decided. Decided.", 3) == ["notes"]


def test_an_essence_names_the_host_of_a_bare_url_concepts_leave_it_out() -> None:
    # Bare URLs were dropped from the prose the essence is picked from, and the sentence
    # kept its holes: "I wanted to redirect to - I decided to spin up a Pages site".
    from selene_dag.llm.extractive.essence import analyze_note

    content = (
        "I wanted to redirect https://global-power-plants.datasettes.com/ to "
        "https://datasette.io/ - I decided to spin up a Cloudflare Pages site to do the work.\n\n"
        "The `_redirects` file holds one line, see <https://developers.cloudflare.com/pages/>.\n\n"
        "It took five minutes."
    )
    analysis = analyze_note("Redirecting a domain with Cloudflare Pages", content, 5)
    assert analysis["essence"].startswith(
        "I wanted to redirect global-power-plants.datasettes.com to datasette.io - I decided"
    )
    assert not any("." in c for c in analysis["concepts"]), analysis["concepts"]
    prose = strip_markdown("see `https://x.example/api/F` or (https://www.q.io/x?y=1#z).", True)
    assert prose == "see x.example or (q.io)."
    assert strip_markdown("see https://datasette.io/docs.") == "see"
    # A URL's user and password are never kept (the URL went whole before).
    secret = strip_markdown("push to https://deploy:ghp_s3cr3t@git.example.com/repo.git now", True)
    assert secret == "push to git.example.com now"
    cases = {
        # A password holding / hides the host: the URL goes whole, never part of it.
        "a https://user:ab/cd+ef==@git.example.com/r b": "a b",
        "a https://user:sec?ret@host b": "a b",
        "a https://user:p@ss@host.com/x b": "a host.com b",
        "a https://mastodon.social/@simon b": "a mastodon.social b",
        "see https://en.wikipedia.org/wiki/Python_(programming_language).": "see en.wikipedia.org.",
        "(see https://q.io/x)": "(see q.io)",
        # An autolink with no URL in it was a crash (the whole ingest failed).
        "it reads <https:// example.com> here": "it reads here",
    }
    for text, prose in cases.items():
        assert strip_markdown(text, True) == prose, text
