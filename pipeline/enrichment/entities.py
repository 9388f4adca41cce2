"""Entities a memory mentions: people, organisations, places, projects and tools.

spaCy's statistical NER (``en_core_web_sm`` 3.8, shipped as a PyPI package so nothing is
downloaded at run time) finds people, organisations and places; an ``entity_ruler`` placed
before it recognises tools and projects that a news-trained model mislabels (it calls
"Redis" a person and "PostgreSQL" a place). CPU inference with a fixed model is
deterministic, which the tests rely on.

Each entity becomes a tag ``entity:<kind>:<slug>`` (what recall's ``expand_entities`` looks
up) and a name under ``metadata.entities[<kind>]``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Protocol

from pipeline.errors import ConfigurationError
from pipeline.stopping import check

ENTITY_TAG_PREFIX = "entity:"
NER_CHUNK = 64  # texts per turn at spaCy: its own batch size, and where a stopping worker may give way
KINDS = ("people", "organizations", "places", "projects", "tools")

# spaCy (OntoNotes) labels → our kinds. Dates, numbers, money and the like are not entities
# anyone expands on.
_LABEL_KINDS = {
    "PERSON": "people",
    "ORG": "organizations",
    "GPE": "places",
    "LOC": "places",
    "FAC": "places",
    "NORP": None,
    "PRODUCT": "tools",
    "TOOL": "tools",
    "PROJECT": "projects",
}

# Software a memory service hears about daily; matched case-insensitively as whole tokens.
TOOL_NAMES = (
    "Python", "JavaScript", "TypeScript", "Rust", "Golang", "Java", "Kotlin", "Swift", "Ruby", "PHP",
    "C++", "C#", "Elixir", "Haskell", "Scala", "SQL", "Bash", "PostgreSQL", "Postgres", "MySQL",
    "SQLite", "MongoDB", "Redis", "FalkorDB", "Neo4j", "Qdrant", "Elasticsearch", "Kafka",
    "RabbitMQ", "Dramatiq", "Celery", "Docker", "Kubernetes", "Terraform", "Ansible", "Heroku",
    "AWS", "GCP", "Azure", "Vercel", "Netlify", "React", "Vue", "Angular", "Svelte", "Next.js",
    "Node.js", "Django", "Flask", "FastAPI", "Rails", "Spring", "PyTorch", "TensorFlow", "NumPy",
    "pandas", "spaCy", "Git", "GitHub", "GitLab", "Jira", "Slack", "Linear", "Notion", "VS Code",
    "Vim", "Emacs", "Grafana", "Prometheus", "Sentry", "Datadog", "OpenAI", "Claude", "ChatGPT",
    "Nginx", "Linux", "macOS", "Windows", "Ubuntu", "Debian", "Homebrew", "npm", "pip", "uv",
    "Poetry", "pytest", "Jest", "Webpack", "Vite", "GraphQL", "gRPC", "OAuth", "JWT", "Stripe",
)
# Also everyday words: these match only as written (capitalised), never in lower case.
AMBIGUOUS_TOOL_NAMES = frozenset({
    "Rust", "Swift", "Java", "Ruby", "Rails", "Spring", "Linear", "Notion", "Windows", "Slack",
    "Poetry", "Jest", "Vim", "Claude", "React", "Vue", "Angular", "Git", "Azure", "Flask", "Linux",
})

_DETERMINERS = ("the", "a", "an", "our", "my", "your", "their", "this", "that", "new", "side")

_SLUG = re.compile(r"[^a-z0-9]+")
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$", re.IGNORECASE)


def slugify(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")


@dataclass
class Entities:
    """Entities of one memory, each kind's names in first-mention order."""

    by_kind: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, name: str) -> None:
        name = _POSSESSIVE.sub("", name.strip()).strip(" .,;:!?\"'()[]")
        if len(name) < 2 or not slugify(name) or name.isdigit():
            return
        names = self.by_kind.setdefault(kind, [])
        if slugify(name) not in {slugify(n) for n in names}:
            names.append(name)

    @property
    def tags(self) -> list[str]:
        return [f"{ENTITY_TAG_PREFIX}{kind}:{slugify(name)}" for kind in KINDS for name in self.by_kind.get(kind, [])]

    def as_metadata(self) -> dict[str, list[str]]:
        return {kind: list(self.by_kind[kind]) for kind in KINDS if self.by_kind.get(kind)}


class EntityExtractor(Protocol):
    name: str

    def extract(self, texts: list[str]) -> list[Entities]:
        """One ``Entities`` per text, in order."""


class NoEntities:
    name = "none"

    def extract(self, texts: list[str]) -> list[Entities]:
        return [Entities() for _ in texts]


class SpacyEntityExtractor:
    name = "spacy"

    def __init__(self, model: str, prune: bool = True):
        try:
            import spacy
        except ImportError as exc:  # pragma: no cover - spaCy is a declared dependency
            raise ConfigurationError("ENTITY_EXTRACTOR=spacy needs the spacy package") from exc
        try:
            # Only the NER: the parser, tagger and lemmatiser would triple the cost and add
            # nothing here.
            nlp = spacy.load(model, exclude=["parser", "lemmatizer", "attribute_ruler", "tagger", "senter"])
        except OSError as exc:
            raise ConfigurationError(
                f"spaCy model {model!r} is not installed (SPACY_MODEL); install the package or set ENTITY_EXTRACTOR=none"
            ) from exc
        if prune:  # off only to measure what pruning saves (ops.bench.enrich --baseline)
            _drop_unheard_embedders(nlp)
        # The ruler runs first, so "GitHub" or "Redis" is a tool, not an organisation or a person.
        ruler = nlp.add_pipe("entity_ruler", before="ner")
        ruler.add_patterns([{"label": "TOOL", "pattern": tool} for tool in TOOL_NAMES])
        # One token pattern over a set, not one pattern per name: the matcher tries every
        # pattern at every token, and 77 of them cost 8 times what one set lookup does.
        any_case = sorted({tool.lower() for tool in TOOL_NAMES if tool not in AMBIGUOUS_TOOL_NAMES and " " not in tool})
        ruler.add_patterns([{"label": "TOOL", "pattern": [{"LOWER": {"IN": any_case}}]}])
        # "project Apollo", "the Apollo project": a capitalised name beside the word project.
        name = {"IS_TITLE": True, "LOWER": {"NOT_IN": list(_DETERMINERS)}}
        ruler.add_patterns([
            {"label": "PROJECT", "pattern": [{"LOWER": "project"}, name]},
            {"label": "PROJECT", "pattern": [name, {"LOWER": "project"}]},
        ])
        self._nlp = nlp
        # spaCy pipelines are not documented as thread-safe; worker threads take turns.
        self._lock = threading.Lock()

    @property
    def components(self) -> list[str]:
        """The spaCy components that run on each text, in order."""
        return list(self._nlp.pipe_names)

    def extract(self, texts: list[str]) -> list[Entities]:
        # A batch is a few hundred texts: seconds of NER, and the other threads queue for the
        # lock meanwhile. A stopping worker gives the message back between chunks, and from
        # the queue for the lock, instead of finishing it (pipeline.stopping).
        docs = []
        for start in range(0, len(texts), NER_CHUNK):
            while not self._lock.acquire(timeout=0.1):
                check()
            try:
                check()
                docs += self._nlp.pipe(texts[start:start + NER_CHUNK], batch_size=NER_CHUNK)
            finally:
                self._lock.release()
        results = []
        for doc in docs:
            entities = Entities()
            for ent in doc.ents:
                kind = _LABEL_KINDS.get(ent.label_)
                if kind is None:
                    continue
                name = ent.text
                if ent.label_ == "PROJECT":
                    name = " ".join(t.text for t in ent if t.lower_ != "project")
                entities.add(kind, name)
            results.append(entities)
        return results


def _drop_unheard_embedders(nlp) -> None:
    """Remove shared token-vector components (``tok2vec``, ``transformer``) nothing listens to.

    In ``en_core_web_sm`` (and md/lg) the NER embeds tokens with its own layer; the shared
    ``tok2vec`` feeds only the tagger and parser, which are excluded. Left in, it would
    compute vectors nobody reads: about a third of the CPU per text here, for the same
    entities. A pipeline whose NER does listen to it (a transformer one) keeps it.
    """
    for name, component in list(nlp.pipeline):
        if hasattr(component, "listening_components") and not component.listening_components:
            nlp.remove_pipe(name)


def build_entity_extractor(kind: str, model: str) -> EntityExtractor:
    if kind == "none":
        return NoEntities()
    return SpacyEntityExtractor(model)


def is_entity_tag(tag: str) -> bool:
    return tag.lower().startswith(ENTITY_TAG_PREFIX)
