"""`ChatModel` adapters: Bedrock Converse (AWS) and any OpenAI-compatible chat endpoint (Ollama,
vLLM, llama.cpp server) named by configuration.

`CAIRN_KNOWLEDGE_MODEL` picks one: `bedrock:<model id>` or `openai:<model>@<base url>`
(e.g. `openai:llama3.1@http://127.0.0.1:11434/v1`). Unset: no model, and `ask` answers
extractively. Any failure to get an answer is `ModelUnavailable`, which `ask` turns into
seed 003's `Error:` string.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from shared.knowledge.ports import ChatModel, ModelUnavailable

TIMEOUT_SECONDS = 30.0


class BedrockChatModel:
    """Bedrock's Converse API (one message, system prompt separate)."""

    def __init__(self, client: Any, model_id: str) -> None:
        self._client = client
        self._model_id = model_id

    @property
    def name(self) -> str:
        return f"bedrock:{self._model_id}"

    def complete(self, system: str, prompt: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.converse(
                modelId=self._model_id,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": 800, "temperature": 0.2},
            )
            blocks = response["output"]["message"]["content"]
        except (BotoCoreError, ClientError, KeyError, TypeError) as exc:
            raise ModelUnavailable(str(exc)) from exc
        return "".join(b.get("text", "") for b in blocks)


class OpenAICompatibleChatModel:
    """POST `<base url>/chat/completions`, as Ollama, vLLM and llama.cpp serve it."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key

    @property
    def name(self) -> str:
        return f"openai:{self._model}@{self._url.removesuffix('/chat/completions')}"

    def complete(self, system: str, prompt: str) -> str:
        body = json.dumps(
            {
                "model": self._model,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                ],
                "temperature": 0.2,
            }
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._url, data=body, headers=headers, method="POST")  # noqa: S310 - configured URL
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310
                payload = json.loads(response.read())
            return str(payload["choices"][0]["message"]["content"])
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError) as exc:
            raise ModelUnavailable(str(exc)) from exc


class MisconfiguredModel:
    """A model setting that names no usable model: every answer is the `Error:` string."""

    def __init__(self, setting: str, problem: str) -> None:
        self._setting = setting
        self._problem = problem

    @property
    def name(self) -> str:
        return self._setting

    def complete(self, system: str, prompt: str) -> str:
        raise ModelUnavailable(self._problem)


def model_from_setting(setting: str | None, region: str) -> ChatModel | None:
    """The model `CAIRN_KNOWLEDGE_MODEL` names; None when unset."""
    if not setting:
        return None
    kind, _, rest = setting.partition(":")
    if kind == "bedrock" and rest:
        import boto3

        return BedrockChatModel(boto3.client("bedrock-runtime", region_name=region), rest)
    if kind == "openai" and "@" in rest:
        model, _, url = rest.partition("@")
        if model and url.startswith(("http://", "https://")):
            return OpenAICompatibleChatModel(url, model)
    return MisconfiguredModel(
        setting,
        "CAIRN_KNOWLEDGE_MODEL must be bedrock:<model id> or openai:<model>@<http(s) base url>",
    )
