"""The one finding contract: what every analyzer hands the ranker (diagnosis.ranking.rank).

A `Finding` is one observation: the signature seen (a key of knowledge.signatures.SPECIFICITY, which says how strongly it
points at each cause, or a cause id of playbook.knowledge.causes when the analyzer measured the cause directly), the
statistic behind it (a p-value, or a measured level when no test applies) turned into a confidence, the share of
GPU time or throughput it costs, the GPUs / ranks / hosts it names and the evidence text. The ranker reads these
fields only — never an analyzer's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    """One observation, in the one shape the ranker scores (see the module docstring).

    confidence   0-1, how sure the signature is present (ranking.confidence(p_value), or a level's confidence)
    weight       0-1, how much it counts: impact(lost_share), or a floor for observations whose cost is unknown
    p_value      the test behind the confidence, None when it is a measured level
    level        the measured level (a share 0-1, a ratio) when no test applies
    lost_share   share of GPU time / throughput the observation costs (0-1), None when unknown
    names        the GPUs ("host:index"), ranks ("rank N") or hosts it names
    readings     {cause: (text, next step)}: how the observation reads for another cause it points at
    only         restrict the reading to one cause of the signature
    anomaly      how sure the observation makes us that *something* is wrong (default confidence × weight;
                 0: no sign by itself)
    """

    signature: str
    evidence: str
    confidence: float = 1.0
    weight: float = 1.0
    p_value: float | None = None
    level: float | None = None
    lost_share: float | None = None
    names: tuple[str, ...] = ()
    next_step: str | None = None
    readings: dict[str, tuple[str, str | None]] | None = None
    only: str | None = None
    anomaly: float | None = None
    source: str = ""
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The finding as JSON-ready values (without the per-cause readings)."""
        return {"signature": self.signature, "source": self.source, "p_value": self.p_value, "level": self.level,
                "confidence": self.confidence, "lost_share": self.lost_share, "names": list(self.names),
                "evidence": self.evidence}
