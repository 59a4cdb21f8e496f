"""`ContradictionJudge` on Amazon Bedrock (Converse): a model decides whether two memories
contradict each other, say the same thing, or neither — where a rule cannot (a contradiction
with no negation, number or antonym: "written in Go" / "a Python codebase").

Only pairs worth a call reach the model: about the same topic, or at least `MIN_COSINE` alike;
an identical body is a duplicate without asking. A failed or unreadable answer falls back to
the rule's verdict, so detection never stops on the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from botocore.exceptions import BotoCoreError, ClientError

from shared.memory.detection import ContradictionJudge, Verdict, judge

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient

MIN_COSINE = 0.5
PROMPT = (
    "Two notes from a team's shared memory follow. Answer with exactly one word:\n"
    "CONTRADICTION if they cannot both be true,\n"
    "DUPLICATE if they state the same thing,\n"
    "NEITHER otherwise.\n\n"
    "Note A: {a}\n\nNote B: {b}"
)
_ANSWERS: dict[str, Literal["conflict", "duplicate"] | None] = {
    "contradiction": "conflict",
    "duplicate": "duplicate",
    "neither": None,
}


class BedrockJudge:
    """Judges a pair with a Bedrock model through Converse, the rule set as fallback."""

    def __init__(
        self,
        client: BedrockRuntimeClient,
        model_id: str,
        fallback: ContradictionJudge = judge,
    ) -> None:
        self._client = client
        self._model_id = model_id
        self._fallback = fallback

    def __call__(self, a: str, b: str, cosine: float, same_topic: bool) -> Verdict:
        rule = self._fallback(a, b, cosine, same_topic)
        if "same_body" in rule.signals or (not same_topic and cosine < MIN_COSINE):
            return rule
        try:
            response = self._client.converse(
                modelId=self._model_id,
                messages=[{"role": "user", "content": [{"text": PROMPT.format(a=a, b=b)}]}],
                inferenceConfig={"maxTokens": 5, "temperature": 0.0},
            )
            text = str(response["output"]["message"]["content"][0]["text"])
        except (BotoCoreError, ClientError, KeyError, IndexError, TypeError):
            return rule
        words = text.strip().split()
        answer = words[0].strip(".:!,").casefold() if words else ""
        if answer not in _ANSWERS:
            return rule
        return Verdict(_ANSWERS[answer], (*rule.signals, "model"))
