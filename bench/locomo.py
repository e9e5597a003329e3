"""LoCoMo, a public benchmark of very long multi-session conversations, as a notes corpus
and a question set for ``bench_ask_recall.py --locomo PATH``.

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024,
github.com/snap-research/locomo) holds ten two-person conversations of 19–32 sessions each
(272 sessions) and about 2,000 annotated questions. Its repository states no license for
the data, so nothing of it is shipped here: this module reads a copy the user fetched
(``data/locomo10.zip`` of the repository, the folder it unpacks to, or the single
``locomo10.json`` list of later releases) and writes, in a folder of the caller's:

- ``notes.jsonl``: one note per session, id ``locomo-<conversation>/session-<n>``, titled
  ``<speaker a> and <speaker b>, session <n> (<its date and time>)`` and dated by it; the
  text one line per turn, ``Speaker: text``, a shared photo's caption after its turn as
  ``[shares a photo: …]``;
- ``locomo.jsonl``: the questions of categories 1–4 (category 5 is adversarial: it asks
  about what was never said) whose answer appears word for word (case aside) in its
  conversation, each with that answer as its one required fact. Temporal answers the
  annotators computed from a session's date ("7 May 2023" for "yesterday") are left out:
  exact-string recall cannot count them.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

_SESSION = re.compile(r"session_(\d+)")
ADVERSARIAL = 5


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation: its id, its sessions' data and its questions."""

    conv_id: str
    data: dict
    qa: list[dict]


def _conversation(item: dict, fallback_id: str) -> Conversation | None:
    if "conversation" in item:
        data = item["conversation"]
        conv_id = str(item.get("sample_id") or fallback_id).removeprefix("conv-")
    else:
        data, conv_id = item, fallback_id
    if not isinstance(data, dict) or "speaker_a" not in data:
        return None
    return Conversation(conv_id, data, list(item.get("qa") or []))


def _from_json(text: str, name: str) -> Iterator[Conversation]:
    loaded = json.loads(text)
    items = loaded if isinstance(loaded, list) else [loaded]
    for n, item in enumerate(items):
        if isinstance(item, dict):
            found = _conversation(item, name if len(items) == 1 else f"{name}-{n}")
            if found is not None:
                yield found


def read_conversations(path: Path) -> list[Conversation]:
    """Every conversation in ``path`` (a .zip, a folder searched deeply, or one .json),
    sorted by id. Raises FileNotFoundError when ``path`` is absent and ValueError when it
    holds no LoCoMo conversation."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no LoCoMo data at {path}")
    found: list[Conversation] = []
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for name in sorted(archive.namelist()):
                if name.endswith(".json") and not name.startswith("__MACOSX"):
                    text = archive.read(name).decode("utf-8")
                    found.extend(_from_json(text, Path(name).stem))
    else:
        files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
        for file in files:
            found.extend(_from_json(file.read_text(encoding="utf-8"), file.stem))
    if not found:
        raise ValueError(f"no LoCoMo conversation in {path}")
    return sorted(found, key=lambda c: (len(c.conv_id), c.conv_id))


def _sessions(data: dict) -> list[tuple[int, list[dict]]]:
    out = []
    for key, turns in data.items():
        match = _SESSION.fullmatch(key)
        if match and isinstance(turns, list) and turns:
            out.append((int(match.group(1)), turns))
    return sorted(out, key=lambda s: s[0])


def _when(stamp: str) -> datetime | None:
    try:
        return datetime.strptime(stamp.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def _turn(turn: dict) -> str:
    line = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
    if turn.get("blip_caption"):
        line += f" [shares a photo: {turn['blip_caption']}]"
    return line


def to_notes(conversations: list[Conversation]) -> list[dict]:
    """One note per session (see the module docstring)."""
    notes = []
    for conv in conversations:
        a, b = conv.data.get("speaker_a", "A"), conv.data.get("speaker_b", "B")
        for number, turns in _sessions(conv.data):
            stamp = str(conv.data.get(f"session_{number}_date_time", ""))
            note = {
                "id": f"locomo-{conv.conv_id}/session-{number}",
                "title": f"{a} and {b}, session {number}" + (f" ({stamp})" if stamp else ""),
                "content": "\n".join(_turn(t) for t in turns),
            }
            when = _when(stamp)
            if when is not None:
                note["created_at"] = note["updated_at"] = when.isoformat()
            notes.append(note)
    return notes


def to_questions(conversations: list[Conversation]) -> list[dict]:
    """The questions exact-string recall can count (see the module docstring), each with
    its conversation's first session as ``source``."""
    questions = []
    for conv in conversations:
        sessions = _sessions(conv.data)
        if not sessions:
            continue
        text = "\n".join(_turn(t) for _, turns in sessions for t in turns).lower()
        source = f"note:locomo-{conv.conv_id}/session-{sessions[0][0]}"
        for qa in conv.qa:
            answer = str(qa.get("answer", "")).strip()
            if qa.get("category") == ADVERSARIAL or not answer or answer.lower() not in text:
                continue
            questions.append(
                {"question": qa["question"], "must_contain": [answer], "source": source}
            )
    return questions


def write(path: Path, out_dir: Path) -> tuple[Path, Path, int, int]:
    """Convert the LoCoMo data at ``path`` into ``out_dir``: ``(notes.jsonl,
    locomo.jsonl, notes, questions)``."""
    conversations = read_conversations(path)
    notes, questions = to_notes(conversations), to_questions(conversations)
    out_dir.mkdir(parents=True, exist_ok=True)
    notes_path, questions_path = out_dir / "notes.jsonl", out_dir / "locomo.jsonl"
    notes_path.write_text("".join(json.dumps(n) + "\n" for n in notes), encoding="utf-8")
    questions_path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return notes_path, questions_path, len(notes), len(questions)
