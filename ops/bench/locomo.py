"""LoCoMo conversations as memories and questions (see shared/data/README.md for the method).

Each turn becomes one memory (sent in conversation order, see ``ops.bench.quality``): content ``"<speaker>: <text>"`` (plus the caption of a shared
image), the session's date-time as timestamp, tags naming the conversation, session and
speaker, and the turn's ``dia_id`` in metadata. Ids are derived from the turn, so loading
twice stores each turn once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

SCORED_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Question:
    conversation: str
    text: str
    category: int
    evidence: tuple[str, ...]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def parse_session_time(value: str) -> str:
    """'1:56 pm on 8 May, 2023' → ISO 8601 (UTC)."""
    moment = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")
    return moment.replace(tzinfo=timezone.utc).isoformat()


def conversation_tag(conversation: str) -> str:
    # "conversation:…" names a scope (SCOPE_TAG_PREFIXES), so enrichment chains the turns by
    # PRECEDED_BY as it would any chat; so does the session tag below, which starts with it
    return f"conversation:locomo-{conversation}"


def turns(conversation: str, data: dict) -> Iterator[dict]:
    """AutoMem memory bodies, one per turn, in conversation order."""
    session = 1
    while f"session_{session}" in data:
        when = parse_session_time(data[f"session_{session}_date_time"])
        for turn in data[f"session_{session}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shared an image: {turn['blip_caption']}]"
            yield {
                "id": f"locomo-{conversation}-{turn['dia_id'].replace(':', '-')}",
                "content": f"{turn['speaker']}: {text}",
                "timestamp": when,
                "tags": [
                    conversation_tag(conversation),
                    f"{conversation_tag(conversation)}:session:{session}",
                    f"speaker:{slug(turn['speaker'])}",
                ],
                "metadata": {"dia_id": turn["dia_id"], "conversation": conversation, "session": session,
                             "speaker": turn["speaker"]},
            }
        session += 1


def evidence_recall(evidence: tuple[str, ...] | list[str], ranked: list[str | None], k: int) -> float:
    """The share of a question's evidence turns among the first ``k`` ranked (dia ids)."""
    return len(set(evidence) & set(ranked[:k])) / len(evidence)


def normalise_evidence(raw: list[str]) -> tuple[str, ...]:
    """Evidence ids as 'D<session>:<turn>', whatever separators the annotators used."""
    found = []
    for item in raw:
        found += [f"D{a}:{b}" for a, b in _EVIDENCE.findall(item)]
    return tuple(dict.fromkeys(found))


def questions(conversation: str, data: dict) -> Iterator[Question]:
    for qa in data["qa"]:
        evidence = normalise_evidence(qa.get("evidence") or [])
        if qa.get("category") in SCORED_CATEGORIES and evidence:
            yield Question(conversation, qa["question"], qa["category"], evidence)


def load(directory: Path) -> list[tuple[str, dict]]:
    return [(path.stem, json.loads(path.read_text())) for path in sorted(directory.glob("*.json"))]
