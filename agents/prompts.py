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

# How the reference's final prompts ask for the answer (`{{}}`: str.format escapes, as in the reference).
ANSWER_FORMATS: dict[str, str] = {
    "boxed": "put the answer in \\boxed{{}}",
    "answer_is": 'format your response as follows "Therefore, the answer is (insert answer here)"',
}


def answer_template(
    style: FinalPromptStyle = "boxed",
    *,
    material: str = "a previous memory",
    based_on: str = "the previous memory",
    tag: str = "memory",
    slot: str = "memory",
) -> str:
    """MemAgent's final-answer prompt (the reference's wording, byte for byte) over any material.

    Every graph answers with this one family: MemAgent from its memory (the defaults), full
    context from the document, RAG from retrieved passages, SUMER from the memory it found.

    >>> print(answer_template(material="a document", based_on="the document", tag="document", slot="chunk"))
    You are presented with a problem and a document. Please answer the problem based on the document and put the answer in \\boxed{{}}.
    <BLANKLINE>
    <problem> 
    {prompt}
    </problem>
    <BLANKLINE>
    <document>
    {chunk}
    </document>
    <BLANKLINE>
    Your answer:
    <BLANKLINE>
    """
    if style not in ANSWER_FORMATS:
        raise ValueError(f"final_prompt style must be one of {sorted(ANSWER_FORMATS)}, got {style!r}")
    return (
        f"You are presented with a problem and {material}. Please answer the problem based on {based_on} and {ANSWER_FORMATS[style]}.\n\n"
        f"<problem> \n{{prompt}}\n</problem>\n\n<{tag}>\n{{{slot}}}\n</{tag}>\n\nYour answer:\n"
    )


FINAL_TEMPLATES: dict[str, str] = {style: answer_template(style) for style in ANSWER_FORMATS}
FINAL_BOXED_TEMPLATE = FINAL_TEMPLATES["boxed"]

# `{{` / `}}` are the reference's str.format escapes (the model must see `\boxed{}`);
# the placeholder alternation is matched in the same single pass.
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(prompt|memory|chunk|retrieve|retrieval_history)\}")  # InfMem adds the last two


def fill_template(template: str, **values: str) -> str:
    """Substitute ``{prompt}``, ``{memory}`` and ``{chunk}`` (InfMem: ``{retrieve}``, ``{retrieval_history}``) in one literal pass.

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
