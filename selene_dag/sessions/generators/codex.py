"""Codex CLI rollout (``rollout-<time>-<id>.jsonl``) that ``codex resume`` can load.

Lines use the current envelope ``{timestamp, type, payload}``: one ``session_meta``, then
``response_item`` messages (the preamble and one user message per chunk, ``input_text``
content, each followed by its ``user_message`` event, as Codex writes them: its session
picker lists a rollout only when one of its first records is such an event) and a closing
assistant message (``output_text``) with its ``agent_message`` event.
"""

from __future__ import annotations

import orjson

from selene_dag.sessions.generators._base import ACK_TEXT, SeedMeta

CLI_VERSION = "0.58.0"
EXTENSION = ".jsonl"


def file_name(meta: SeedMeta) -> str:
    """Codex names rollouts ``rollout-YYYY-MM-DDTHH-MM-SS-<id>.jsonl``."""
    stamp = meta.created_at[:19].replace(":", "-")
    return f"rollout-{stamp}-{meta.session_id}{EXTENSION}"


def render(texts: list[str], meta: SeedMeta) -> str:
    """The rollout text; ``texts[0]`` is the preamble, the rest chunk texts."""
    ts = meta.created_at
    lines = [
        {
            "timestamp": ts,
            "type": "session_meta",
            "payload": {
                "id": meta.session_id,
                "timestamp": ts,
                "cwd": meta.cwd,
                "originator": "codex_cli_rs",
                "cli_version": CLI_VERSION,
                "instructions": None,
                "source": "cli",
                "model_provider": "openai",
            },
        }
    ]
    for text in texts:
        lines.append(
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": text}],
                },
            }
        )
        # Codex writes each prompt twice, as the model saw it and as an event; its session
        # picker lists only rollouts with a user_message event in their first records.
        lines.append(
            {
                "timestamp": ts,
                "type": "event_msg",
                "payload": {"type": "user_message", "message": text, "images": []},
            }
        )
    lines.append(
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ACK_TEXT}],
            },
        }
    )
    lines.append(
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {"type": "agent_message", "message": ACK_TEXT},
        }
    )
    return b"\n".join(orjson.dumps(line) for line in lines).decode() + "\n"
