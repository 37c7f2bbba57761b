"""Answer extraction from a final MemAgent reply (``\\boxed{}`` or "the answer is")."""

from __future__ import annotations

from .prompts import FinalPromptStyle


def last_boxed_content(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` with nested braces matched.

    Also accepts the ``\\boxed answer$`` form (text up to the next ``$``). Returns
    ``None`` when there is no box or the last box is unclosed.

    >>> last_boxed_content(r"first \\boxed{1}, then \\boxed{\\frac{1}{2}}")
    '\\\\frac{1}{2}'
    >>> last_boxed_content(r"$\\boxed 42$") , last_boxed_content("no box") is None
    ('42', True)
    """
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    rest = text[start + len("\\boxed") :]
    if rest.startswith(" "):
        return rest[1:].split("$", 1)[0].strip()
    if not rest.startswith("{"):
        return None
    depth = 0
    for position, char in enumerate(rest):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return rest[1:position]
    return None


def answer_is_content(text: str) -> str | None:
    """Text after the last ``the answer is`` (case-insensitive), cleaned as the reference does.

    ``*`` is removed, then surrounding spaces and one trailing period are stripped.

    >>> answer_is_content("So... Therefore, the answer is **Paris**.")
    'Paris'
    """
    position = text.lower().rfind("the answer is")
    if position < 0:
        return None
    answer = text[position + len("the answer is") :].replace("*", "").strip()
    if answer.endswith("."):
        answer = answer[:-1].strip()
    return answer


def extract_answer(response: str, style: FinalPromptStyle = "boxed") -> str | None:
    """The answer a final reply gives under the prompt ``style``; ``None`` if it gives none.

    An empty box or an empty "the answer is" gives no answer either.

    >>> extract_answer(r"It is \\boxed{42}."), extract_answer(r"It is \\boxed{ }."), extract_answer("The answer is .", "answer_is")
    ('42', None, None)
    """
    if style not in ("boxed", "answer_is"):
        raise ValueError(f"style must be 'boxed' or 'answer_is', got {style!r}")
    answer = last_boxed_content(response) if style == "boxed" else answer_is_content(response)
    return answer if answer and answer.strip() else None
