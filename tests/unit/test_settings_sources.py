"""One source for every default: the settings groups declare them, everything else derives."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from api.index_maintainer import BuildHolds
from api.writes import WriteTuning
from pipeline.config import ContextBonuses, RecallProfile, ScoringWeights, Settings
from pipeline.maintenance.policy import DecayPolicy, ForgetPolicy
from pipeline.query.scoring import RecencyPolicy
from pipeline.query.search import SearchPolicy
from pipeline.records import Limits
from pipeline.settings_groups import WritePathTuning

# PoolBM25's k1 and b are the algorithm's constants, not settings.
CONSTANTS = {(SearchPolicy, "lexical")}


@pytest.mark.parametrize("policy", [SearchPolicy, RecencyPolicy, WriteTuning, BuildHolds, Limits, DecayPolicy,
                                    ForgetPolicy, ScoringWeights, ContextBonuses])
def test_policy_objects_declare_no_defaults_of_their_own(policy):
    if issubclass(policy, BaseModel):
        defaulted = [name for name, field in policy.model_fields.items() if not field.is_required()]
    else:
        defaulted = [f.name for f in dataclasses.fields(policy)
                     if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
    assert [name for name in defaulted if (policy, name) not in CONSTANTS] == []


def test_the_settings_defaults_are_the_tuned_profile():
    assert Settings.model_construct().scoring_weights == RecallProfile.TUNED.weights
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    assert {name: defaults[name] for name in RecallProfile.TUNED.settings()} == RecallProfile.TUNED.settings()


def test_the_automem_profile_sets_every_field_it_decides_unless_set_explicitly():
    settings = Settings(recall_profile="automem", search_weight_exact=0.3)
    expected = {**RecallProfile.AUTOMEM.settings(), "search_weight_exact": 0.3}
    assert {name: getattr(settings, name) for name in expected} == expected


def test_derived_policies_read_the_settings(monkeypatch):
    monkeypatch.setenv("WRITE_COALESCE_WINDOW_MS", "7")
    monkeypatch.setenv("SEARCH_RECENCY_CURVE", "exp")
    settings = Settings()
    assert WriteTuning.from_settings(settings).coalesce_window_s == 0.007
    assert SearchPolicy.from_settings(settings).recency == RecencyPolicy(180.0, "exp")
    assert Limits.from_settings(settings, vector_size=8).content_max_chars == settings.memory_content_hard_limit
    assert settings.group(WritePathTuning).write_coalesce_window_ms == 7
