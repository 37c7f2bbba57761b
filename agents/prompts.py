"""MemAgent prompt templates, verbatim from the reference implementation.

The templates keep the reference's exact text, including the space after
``<problem>``. They are filled by :func:`fill_template`, a single literal pass, so
text inside a document (``</section>``, ``{prompt}``, ...) can never change the
template around it.
"""

from __future__ import annotations

import re
from typing import Literal

FinalPromptStyle = Literal["boxed", "answer_is"]

MEMORY_START = "No previous memory"
"""The memory before the first chunk (MemAgent, arXiv 2507.02259)."""

MEMORY_UPDATE_TEMPLATE = """You are presented with a problem, a section of an article that may contain the answer to the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem. Be sure to retain all relevant details from the previous memory while adding any new, useful information.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Updated memory:
"""

FINAL_BOXED_TEMPLATE = """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and put the answer in \\boxed{{}}.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
"""

FINAL_ANSWER_IS_TEMPLATE = """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and format your response as follows "Therefore, the answer is (insert answer here)".

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
"""

FINAL_TEMPLATES: dict[str, str] = {"boxed": FINAL_BOXED_TEMPLATE, "answer_is": FINAL_ANSWER_IS_TEMPLATE}

# `{{` / `}}` are the reference's str.format escapes (the model must see `\boxed{}`);
# the placeholder alternation is matched in the same single pass.
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(prompt|memory|chunk)\}")


def fill_template(template: str, **values: str) -> str:
    """Substitute ``{prompt}``, ``{memory}`` and ``{chunk}`` in one literal pass.

    Unlike ``str.format`` applied twice (or ``str.replace`` per key), substituted text
    is never scanned again, so a document containing ``{memory}`` stays literal.

    >>> fill_template("<p>{prompt}</p> \\\\boxed{{}}", prompt="{memory}?")
    '<p>{memory}?</p> \\\\boxed{}'
    """

    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name not in values:
            raise KeyError(f"template placeholder {{{name}}} has no value; got {sorted(values)}")
        return values[name]

    return _PLACEHOLDER.sub(substitute, template)


def memory_update_prompt(question: str, memory: str, chunk: str) -> str:
    """The user message that asks the model to overwrite ``memory`` after reading ``chunk``."""
    return fill_template(MEMORY_UPDATE_TEMPLATE, prompt=question, memory=memory, chunk=chunk)


def final_prompt(question: str, memory: str, style: FinalPromptStyle = "boxed") -> str:
    """The user message that asks for the final answer from ``memory`` alone."""
    if style not in FINAL_TEMPLATES:
        raise ValueError(f"final_prompt style must be one of {sorted(FINAL_TEMPLATES)}, got {style!r}")
    return fill_template(FINAL_TEMPLATES[style], prompt=question, memory=memory)
