"""The query in the first person (pipeline/query/pronouns.py) and the setting that picks it."""

from __future__ import annotations

import pytest

from pipeline.config import Settings
from pipeline.query.candidates import CandidateSources, VectorStatus
from pipeline.query.pronouns import in_first_person
from tests.unit.fake_recall_sources import RecordingEmbedder


@pytest.mark.parametrize("text, expected", [
    ("What foods does Nebraas like?", "What foods do I like?"),
    ("What is Caroline's identity?", "What is my identity?"),
    ("Does Kate work full-time?", "Do I work full-time?"),
    ("Who does Nebraas live with?", "Who do I live with?"),
    ("What relationship advice did Nebraas give to Nicolas?", "What relationship advice did I give to you?"),
    ("How many times has Melanie been to the beach with Caroline?", "How many times have I been to the beach with you?"),
    ("What are Caroline and Melanie's plans?", "What are our plans?"),
    ("Do Nicolas and Nebraas drink beer?", "Do we drink beer?"),
    ("Is Jon's shop open?", "Is my shop open?"),
    ("What did Elise say to Kate about Kate's dog?", "What did I say to you about your dog?"),
    ("What did Emi make on 29 May 2023?", "What did I make on 29 May 2023?"),
    ("Was Bob’s dog happy?", "Was my dog happy?"),
    ("What did Elise play 5 Jan 2024?", "What did I play 5 Jan 2024?"),
    ("What did Gina tell Jon about Gina?", "What did I tell you about me?"),
])
def test_names_become_pronouns(text, expected):
    assert in_first_person(text) == expected


@pytest.mark.parametrize("text", ["what happened to the build", "Where did I leave the LGBTQ flyer?",
                                  "Kate went home.", "", None])
def test_no_second_form_without_a_name(text):
    assert in_first_person(text) is None


def test_the_form_picks_the_second_text():
    sources = lambda e: CandidateSources(lambda: None, lambda: None, lambda: e, lambda: 2)
    pronouns, drop = RecordingEmbedder(), RecordingEmbedder()
    sources(pronouns).query_vector("What are Kate's hobbies?", VectorStatus(), 1.0, "pronouns")
    sources(drop).query_vector("What are Kate's hobbies?", VectorStatus(), 1.0, "drop")
    assert pronouns.calls == [["What are Kate's hobbies?", "What are my hobbies?"]]
    assert drop.calls == [["What are Kate's hobbies?", "What are hobbies?"]]


def test_the_setting_reaches_the_search_policy():
    from pipeline.query.engine import RecallEngine

    assert Settings().recall_query_nameless_form == "pronouns"
    engine = RecallEngine(Settings(recall_query_nameless_form="drop"), lambda: None, lambda: None, lambda: RecordingEmbedder())
    assert engine._policy.nameless_form == "drop"
    with pytest.raises(ValueError):
        Settings(recall_query_nameless_form="shout")
