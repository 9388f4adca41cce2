import math

import fakeredis
import pytest
from pydantic import ValidationError

from pipeline.classify import classify
from pipeline.config import RecallProfile, Settings
from pipeline.embedding import HashEmbedder
from pipeline.errors import ConfigurationError
from pipeline.maintenance.schedule import Clock, ScheduledJob


@pytest.mark.parametrize(
    "text, kind",
    [
        ("We decided to go with Postgres", "Decision"),
        ("I prefer dark mode in every editor", "Preference"),
        ("Every morning she runs 5k", "Habit"),
        ("Use snake_case naming for Python modules", "Style"),
        ("Turns out the root cause was DNS", "Insight"),
        ("Deploys typically fail on Fridays", "Pattern"),
        ("The meeting is in room 4", "Context"),
    ],
)
def test_pattern_classifier(text, kind):
    result = classify(text)
    assert result.type == kind
    assert 0 < result.confidence <= 0.9


def test_hash_embedder_is_deterministic_and_normalised():
    embedder = HashEmbedder(64)
    a, b, c = embedder.embed(["the cat sat", "the cat sat", "quantum chromodynamics"])
    assert a == b
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-9)
    assert a != c


def test_settings_refuse_public_interface_without_token():
    with pytest.raises(ConfigurationError):
        Settings(host="0.0.0.0", automem_api_token=None)
    assert Settings(host="0.0.0.0", automem_api_token="t").host == "0.0.0.0"


def test_scoring_weights_read_from_env(monkeypatch):
    monkeypatch.setenv("SEARCH_WEIGHT_VECTOR", "0.6")
    weights = Settings().scoring_weights
    assert weights.vector == 0.6 and weights.keyword == 0.1


def test_tuned_profile_is_the_default():
    settings = Settings()
    assert settings.recall_profile == "tuned"
    assert settings.recall_keyword_search == "always"
    weights = settings.scoring_weights
    assert (weights.vector, weights.keyword, weights.lexical, weights.time_mention) == (0.5, 0.1, 0.1, 0.1)
    assert (settings.search_weight_neighbour, settings.search_weight_neighbour_far, weights.asks) == (0.1, 0.1, 0.15)
    assert (settings.recall_scoped_fetch_factor, settings.recall_keyword_per_result) == (1, 2)
    assert (settings.recall_keyword_topic_per_result, settings.recall_neighbour_far_same_speaker) == (2, True)
    assert (settings.recall_keyword_extra_min_vector, settings.recall_query_nameless_form) == (0.25, "pronouns")


def test_automem_profile_restores_the_spec_weights(monkeypatch):
    monkeypatch.setenv("RECALL_PROFILE", "automem")
    settings = Settings()
    assert settings.recall_keyword_search == "fill"
    assert settings.scoring_weights == RecallProfile.AUTOMEM.weights
    assert (settings.search_weight_neighbour, settings.search_weight_neighbour_far) == (0.0, 0.0)
    assert (settings.recall_scoped_fetch_factor, settings.recall_keyword_per_result) == (2, 2)


def test_an_explicit_setting_wins_over_the_profile(monkeypatch):
    monkeypatch.setenv("RECALL_PROFILE", "automem")
    monkeypatch.setenv("SEARCH_WEIGHT_NEIGHBOUR", "0.2")
    monkeypatch.setenv("RECALL_KEYWORD_SEARCH", "always")
    settings = Settings()
    assert settings.search_weight_neighbour == 0.2 and settings.recall_keyword_search == "always"
    assert settings.search_weight_vector == 0.35 and settings.search_weight_neighbour_far == 0.0


def test_an_unknown_profile_is_refused(monkeypatch):
    monkeypatch.setenv("RECALL_PROFILE", "fastest")
    with pytest.raises(ValidationError):
        Settings()


def test_two_clocks_enqueue_a_job_once_per_interval():
    server = fakeredis.FakeServer()
    runs = []
    job = ScheduledJob("decay", 3600, lambda: runs.append(1))
    first = Clock(fakeredis.FakeRedis(server=server), [job])
    second = Clock(fakeredis.FakeRedis(server=server), [job])
    assert first.tick(now=7200.0) == ["decay"]
    assert second.tick(now=7200.5) == []
    assert first.tick(now=9000.0) == []  # not due yet
    assert second.tick(now=10801.0) == ["decay"]
    assert len(runs) == 2


def test_derived_settings_are_values_not_methods():
    settings = Settings(scope_tag_prefixes="Session, conversation")
    assert settings.scope_prefixes == ("session", "conversation")
    assert isinstance(settings.excluded_types, frozenset) and isinstance(settings.slack_noise_subtypes, frozenset)


def test_automem_environment_names_are_read(monkeypatch):
    names = {
        "AUTOMEM_API_TOKEN": ("automem_api_token", "api-t"), "ADMIN_API_TOKEN": ("admin_api_token", "admin-t"),
        "FALKORDB_HOST": ("falkordb_host", "graph.internal"), "FALKORDB_PORT": ("falkordb_port", 6390),
        "FALKORDB_PASSWORD": ("falkordb_password", "pw"), "QDRANT_URL": ("qdrant_url", "http://q:6333"),
        "QDRANT_API_KEY": ("qdrant_api_key", "qk"), "QDRANT_COLLECTION": ("qdrant_collection", "mem2"),
        "VECTOR_SIZE": ("vector_size", 768), "EMBEDDING_PROVIDER": ("embedding_provider", "openai"),
        "OPENAI_API_KEY": ("openai_api_key", "sk-x"), "REDIS_URL": ("redis_url", "redis://broker:6379/0"),
        "PORT": ("port", 5000),
    }
    for variable, (_, value) in names.items():
        monkeypatch.setenv(variable, str(value))
    settings = Settings()
    assert {variable: getattr(settings, field) for variable, (field, _) in names.items()} == \
        {variable: value for variable, (_, value) in names.items()}


def test_scoped_fetch_factor_widens_only_a_tag_scoped_vector_fetch():
    from pipeline.query.search import SearchPolicy

    def policy(factor: int) -> SearchPolicy:
        return SearchPolicy.from_settings(Settings(recall_scoped_fetch_factor=factor))

    assert policy(1).fetch_size(10, scoped=True) == policy(1).fetch_size(10, scoped=False) == 40
    assert policy(2).fetch_size(10, scoped=True) == 80 and policy(2).fetch_size(10, scoped=False) == 40
    assert policy(3).fetch_size(30, scoped=True) == 200  # still capped


def test_a_worker_process_share_of_the_cores_goes_to_one_thread_passes_and_queries_take_one(monkeypatch):
    import os

    from api.app import query_side
    from pipeline.config import Settings

    def layout(settings: Settings) -> tuple[int, int]:
        return settings.resolved_embed_model_passes, settings.resolved_embed_torch_threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert layout(Settings()) == (4, 1)
    assert layout(Settings(worker_processes=2)) == (2, 1)
    assert layout(Settings(worker_processes=8)) == (1, 1)
    # a thread count someone chose keeps one pass at a time; passes chosen share the cores
    assert layout(Settings(embed_torch_threads=3)) == (1, 3)
    assert layout(Settings(embed_model_passes=2)) == (2, 2)
    assert layout(Settings(embed_model_passes=2, embed_torch_threads=1)) == (2, 1)
    assert layout(Settings(embed_model_row_tokens=0)) == (4, 1)  # a row per text: split between passes all the same
    assert layout(query_side(Settings())) == (1, 1)
    assert layout(query_side(Settings(embed_torch_threads=2))) == (1, 2)
