"""Deterministic, varied conversation text for benchmarks (no repeated single sentence).

>>> gen = TextGen(seed=1)
>>> len(gen.message()) > 10
True
"""

from __future__ import annotations

import random

_SUBJECTS = (
    "the deployment",
    "our staging cluster",
    "the billing service",
    "Maria",
    "the new intern",
    "the search index",
    "this migration",
    "the mobile app",
    "the quarterly report",
    "the API gateway",
    "the retry queue",
    "customer support",
    "the Lisbon office",
    "the data pipeline",
    "the CI runner",
    "the onboarding flow",
    "the invoice export",
    "the auth module",
    "the cache layer",
    "Kenji",
)
_VERBS = (
    "failed",
    "needs review",
    "was rolled back",
    "is scheduled",
    "keeps timing out",
    "looks healthy",
    "was migrated",
    "should be refactored",
    "got slower",
    "passed all checks",
    "is blocked",
    "was deployed",
    "crashed twice",
    "needs more memory",
    "is waiting on legal",
    "was approved",
)
_TAILS = (
    "before Friday",
    "after the outage",
    "on the eu-west replica",
    "since version 3.11.7",
    "according to the dashboard",
    "during the load test",
    "when traffic peaks",
    "on Tuesday night",
    "behind the feature flag",
    "for enterprise customers",
    "in the nightly build",
    "last sprint",
    "without any alerts",
    "per the runbook",
    "at 2am UTC",
    "in the pull request",
)
_EXTRAS = (
    "Contact ops@example.com if it happens again.",
    "See https://status.example.com/incidents/42.",
    "Can you check the logs?",
    "I think we should add a test for it.",
    "Let's sync tomorrow.",
    "The error rate was 4.2% for ten minutes.",
    "東京のチームにも共有してください。",
    "Remember the customer prefers email over phone.",
    "Ticket PRJ-1182 tracks it.",
    "Budget impact is roughly 1,200 EUR per month.",
    "Rollback took 6 minutes.",
    "Thanks!",
)


class TextGen:
    """Seeded generator of chat-like sentences with names, numbers, emails, URLs and some CJK."""

    def __init__(self, seed: int = 42) -> None:
        self._rng = random.Random(seed)

    def sentence(self) -> str:
        rng = self._rng
        text = f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} {rng.choice(_TAILS)}."
        if rng.random() < 0.4:
            text += " " + rng.choice(_EXTRAS)
        return text

    def message(self) -> str:
        return " ".join(self.sentence() for _ in range(self._rng.randint(1, 4)))
