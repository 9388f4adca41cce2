"""The query's words less its names: what a second text search looks for.

A keyword search ranks by BM25 over the scope, so a query's rarest word rules it. In a chat
between two people the name a question uses ("What are Kate's hobbies?") is rare: it stands in
the other speaker's greetings and vocatives ("Hey Kate!", "What about Kate?"), not in what Kate
says (her turns carry her label, which may not even be that name). The first text search then
brings those greetings; a second one with the topic words alone ("hobbies") brings the turns
that talk about the topic. Its candidates join the pool and are scored like any other
(``RECALL_KEYWORD_TOPIC_PER_RESULT``).
"""

from __future__ import annotations

from pipeline.query.names import name_spans


def topic_keywords(text: str, keywords: list[str]) -> list[str]:
    """``keywords`` (the query's, in order) less the names ``text`` holds; [] when it holds none or nothing is left."""
    names = {name.lower() for name, _, _, _ in name_spans(text)}
    if not names:
        return []
    topics = [k for k in keywords if k.split("'")[0].split("’")[0] not in names]
    return topics if topics and len(topics) < len(keywords) else []
