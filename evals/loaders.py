"""Loaders for the long-context data files users bring; each returns :class:`~.records.Sample` records.

* :func:`load_ruler_jsonl` -- official RULER JSON lines (haystack inside ``input``, split
  back out by the task template) and MemAgent's variant (``context`` apart);
* :func:`load_memagent_eval` -- MemAgent's ``eval_{N}.json``, ``context`` as text or as
  document indices into a pool; :func:`load_memagent_train_parquet` -- its training rows;
* :func:`load_hotpotqa` / :func:`load_squad` -- HotpotQA distractor / SQuAD v2 JSON turned
  into RULER-HotpotQA / RULER-SQuAD with the documented recipe (memagent.md, RULER qa);
* :func:`load_locomo` -- LoCoMo, the ``locomo10.json`` release or one conversation per file;
* :func:`load_records` -- any of the above, sniffed from the extension and first record.

A bad file raises :class:`DataFileError` naming the file, the record and the field.

>>> import json, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "eval_50.json")
>>> _ = open(path, "w").write(json.dumps([{"context": "Document 1:\\nParis", "input": "Capital?", "answers": ["Paris"]}]))
>>> load_records(path)[0].question
'Capital?'
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..agents.calls import positive_int
from .multihop import render_documents
from .records import Sample
from .ruler import TASKS
from .templates import task_family


PathLike = str | os.PathLike

# LoCoMo's category numbers as they are used in the released data (not the order the paper
# lists them in): 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# Category-5 questions have no answer in the conversation; LoCoMo's evaluation counts a
# reply as right when it says so in one of these words.
LOCOMO_NO_ANSWER = ["not mentioned", "no information available"]


class DataFileError(ValueError):
    """A data file that is not what its loader expects; the message names file, record and field."""


# -- reading and validation --------------------------------------------------------------------


def _read_text(path: PathLike) -> str:
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DataFileError(
            f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset {error.start}); expected a JSON or JSON-lines file"
        ) from None
    if not text.strip():
        raise DataFileError(f"{path}: the file is empty")
    return text


def _read_json(path: PathLike) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataFileError(f"{path}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None


def _read_json_lines(path: PathLike) -> list[Any]:
    records = []
    for line_number, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise DataFileError(f"{path}: line {line_number} is not valid JSON ({error.msg}); expected one JSON object per line") from None
    return records


def _read_json_records(path: PathLike) -> list[Any]:
    """A JSON array, or JSON lines (Hugging Face ``datasets`` reads MemAgent's files either way)."""
    if _read_text(path).lstrip().startswith("["):
        return _expect_list(_read_json(path), path)
    return _read_json_lines(path)


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages.

    >>> json_type({}), json_type([]), json_type("a"), json_type(1.5), json_type(None)
    ('object', 'list', 'string', 'number', 'null')
    """
    names = {dict: "object", list: "list", str: "string", bool: "true/false", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _expect_list(data: Any, path: PathLike, what: str = "a JSON list of records") -> list:
    if not isinstance(data, list):
        raise DataFileError(f"{path}: expected {what}, got a JSON {json_type(data)}")
    if not data:
        raise DataFileError(f"{path}: the list of records is empty")
    return data


def _field(record: Any, name: str, path: PathLike, index: int, types: type | tuple[type, ...] | None = None) -> Any:
    if not isinstance(record, dict):
        raise DataFileError(f"{path}: record {index} is a JSON {json_type(record)}, expected an object")
    if name not in record:
        raise DataFileError(f"{path}: record {index} has no field {name!r} (its fields: {', '.join(record) or 'none'})")
    value = record[name]
    if types is not None and not isinstance(value, types):
        expected = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise DataFileError(f"{path}: record {index} field {name!r} is a {type(value).__name__}, expected {expected}")
    return value


def _golds(value: Any, path: PathLike, index: int, name: str) -> list[str]:
    # Golds may be a bare string or number in user files; numbers (years, counts) become strings.
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(gold, (str, int, float)) for gold in values):
        raise DataFileError(f"{path}: record {index} field {name!r} must hold gold answers (strings or numbers), got {value!r}")
    return [str(gold) for gold in values]


# -- RULER ----------------------------------------------------------------------------------------

_WS = r"\s+"
# RULER's templates as patterns: newlines match any whitespace (RULER can flatten them with
# remove_newline_tab) and the NIAH wording is singular or plural.
_BEFORE_PATTERNS = {
    "niah": r"(?:Some|A) special magic \w+ (?:are|is) hidden within the following text\. Make sure to memorize it\. I will quiz you about the \w+ afterwards\.\s+",
    "vt": r"Memorize and track the chain\(s\) of variable assignment hidden in the following text\.\s+",
    "fwe": r"Read the following coded text and track the frequency of each coded word\. Find the three most frequently appeared coded words\. ",
    "cwe": r"Below is a numbered list of words\. In these words, some appear more often than others\. Memorize the ones that appear most often\.\s+",
    "qa": r"Answer the question based on the given documents\. Only give me the answer and do not output any other words\.\s+The following are given documents\.\s+",
}
_AFTER_PATTERNS = {
    "niah": r"\s+(?P<question>What (?:are all|is) the special magic \w+ for (?P<query>.+?) mentioned in the provided text\?)",
    "vt": r"\s+(?P<question>Question: Find all variables that are assigned the value (?P<query>\S+) in the text above\.)",
    "fwe": r"\s+(?P<question>Question: Do not provide any explanation\. Please ignore the dots '\.\.\.\.'\. What are the three most frequently appeared words in the above coded text\?)",
    "cwe": r"\s+(?P<question>Question: What are the 10 most common words in the above list\?)",
    "qa": r"\s+Answer the question based on the given documents\. Only give me the answer and do not output any other words\.\s+Question: (?P<query>[^\n]*)",
}
# Chat-template markup a model template may put right after the question (Llama 3, ChatML,
# Llama 2, Gemma): the question ends where it starts.
_CHAT_MARKUP = re.compile(r"<\||\[/INST\]|</s>|<end_of_turn>|<\|im_end\|>")


def _task_from_path(path: PathLike) -> str | None:
    """RULER writes ``{task}/validation.jsonl``; accept the task as file stem or parent directory."""
    path = Path(path)
    for name in (path.stem, path.parent.name):
        try:
            task_family(name)
            return name
        except ValueError:
            continue
    return None


def _family_of_input(text: str) -> str | None:
    found = [(match.start(), family) for family, pattern in _BEFORE_PATTERNS.items() if (match := re.search(pattern, text))]
    return min(found)[1] if found else None


def split_ruler_input(text: str, family: str) -> tuple[str, str, str, str]:
    """Cut an official RULER ``input`` into ``(before, document, after, question)``.

    ``before + document + after`` gives the input back byte for byte (chat-template markup
    included); ``question`` is the query side, as :func:`~.ruler.generate_task` writes it.

    >>> split_ruler_input("A special magic number is hidden within the following text. Make sure to memorize it. "
    ...     "I will quiz you about the number afterwards.\\nhay\\nWhat is the special magic number for red-fox mentioned in the provided text?", "niah")[1:]
    ('hay', '\\nWhat is the special magic number for red-fox mentioned in the provided text?', 'What is the special magic number for red-fox mentioned in the provided text?')
    """
    if family not in _BEFORE_PATTERNS:
        raise ValueError(f"no RULER template for task family {family!r}; expected one of {', '.join(_BEFORE_PATTERNS)}")
    before = re.search(_BEFORE_PATTERNS[family], text)
    if before is None:
        raise ValueError(f"the input does not contain the {family} template's opening")
    afters = list(re.finditer(_AFTER_PATTERNS[family], text[before.end() :]))
    if not afters:
        raise ValueError(f"the input does not contain the {family} template's question after the haystack")
    after = afters[-1]
    start, end = before.end(), before.end() + after.start()
    if family == "qa":
        question = _CHAT_MARKUP.split(after.group("query"))[0].strip()
    else:
        question = after.group("question")
    return text[:start], text[start:end], text[end:], question


def load_ruler_jsonl(path: PathLike, task: str | None = None) -> list[Sample]:
    """Records of a RULER JSON-lines file, official (haystack in ``input``) or MemAgent's variant.

    ``task`` defaults to the file's name or directory (``niah_single_1/validation.jsonl``),
    else the template family found in the first input (``niah``, ``vt``, ``fwe``, ``cwe``, ``qa``).
    QA tasks score any-of, the others all-of (RULER).
    """
    records = _read_json_lines(path)
    if not records:
        raise DataFileError(f"{path}: the file holds no records")
    task = task or _task_from_path(path)
    samples = []
    for index, record in enumerate(records):
        text = _field(record, "input", path, index, str)
        answers = _golds(_field(record, "outputs", path, index), path, index, "outputs")
        if task is None:
            task = _family_of_input(text)
            if task is None and "context" not in record:
                raise DataFileError(f"{path}: record {index}: cannot tell the RULER task of the input; pass task= (one of {', '.join(TASKS)})")
        family = task_family(task) if task else "qa"
        meta = {key: record[key] for key in ("index", "length", "length_w_model_temp", "answer_prefix", "token_position_answer") if key in record}
        if "context" in record:
            question, document = text, _field(record, "context", path, index, str)
        else:
            try:
                before, document, after, question = split_ruler_input(text, family)
            except ValueError as error:
                raise DataFileError(f"{path}: record {index} field 'input': {error} (task {task})") from None
            meta.update(prompt_before=before, prompt_after=after)
        samples.append(Sample(question=question, document=document, answers=answers, task=task or "qa", metric="any" if family == "qa" else "all", meta=meta))
    return samples


# -- MemAgent ------------------------------------------------------------------------------------


def hotpotqa_pool(data: list) -> list[str]:
    """MemAgent's / RULER's HotpotQA document pool: every unique ``"{title}\\n{sentences}"``, sorted.

    >>> hotpotqa_pool([{"context": [["B", ["b1", " b2"]], ["A", ["a"]]]}])
    ['A\\na', 'B\\nb1 b2']
    """
    # The sentences carry their own leading spaces, hence "".join as in the reference code.
    return sorted({f"{title}\n{''.join(sentences)}" for item in data for title, sentences in item["context"]})


def squad_pool(data: dict) -> list[str]:
    """RULER's SQuAD document pool: every unique paragraph context, sorted."""
    return sorted({paragraph["context"] for article in data["data"] for paragraph in article["paragraphs"]})


def _load_pool(pool: PathLike | Sequence[str]) -> list[str]:
    if not isinstance(pool, (str, os.PathLike)):
        return list(pool)
    data = _read_json(pool)
    if isinstance(data, dict) and "data" in data:
        return squad_pool(data)
    data = _expect_list(data, pool, "a JSON list of documents, a HotpotQA file or a SQuAD file")
    if all(isinstance(document, str) for document in data):
        return data
    if isinstance(data[0], dict) and "context" in data[0]:
        return hotpotqa_pool(data)
    raise DataFileError(f"{pool}: a pool must be a JSON list of document strings, a HotpotQA JSON file or a SQuAD JSON file")


def load_memagent_eval(path: PathLike, pool: PathLike | Sequence[str] | None = None, *, task: str = "qa_hotpotqa") -> list[Sample]:
    """MemAgent's ``eval_{N}.json`` records ``{context, input, answers, num_docs, index}``.

    ``context`` is the rendered document, or (for N > 10000 in the reference) a list of
    indices into a document ``pool``: a list of strings, or the path of a JSON list of
    strings, of the HotpotQA file the pool was built from (sorted unique paragraphs, as the
    reference does) or of a SQuAD file. Golds may sit in ``answers`` or RULER's ``outputs``.
    """
    records = _read_json_records(path)
    documents = None
    samples = []
    for index, record in enumerate(records):
        question = _field(record, "input", path, index, str)
        gold_field = "answers" if isinstance(record, dict) and "answers" in record or "outputs" not in record else "outputs"
        answers = _golds(_field(record, gold_field, path, index), path, index, gold_field)
        context = _field(record, "context", path, index, (str, list))
        if isinstance(context, list):
            if pool is None:
                raise DataFileError(f"{path}: record {index} field 'context' is a list of document indices; pass pool= (the documents it indexes)")
            documents = documents if documents is not None else _load_pool(pool)
            bad = [position for position in context if not isinstance(position, int) or not 0 <= position < len(documents)]
            if bad:
                raise DataFileError(f"{path}: record {index} field 'context' has indices outside the pool of {len(documents)} documents: {bad[:5]}")
            context = render_documents([documents[position] for position in context])
        meta = {"num_docs": record.get("num_docs"), "index": record.get("index", index)}
        samples.append(Sample(question=question, document=context, answers=answers, task=task, metric="any", meta=meta))
    return samples


def load_memagent_train_parquet(path: PathLike, *, task: str = "qa_hotpotqa") -> list[Sample]:
    """MemAgent's training rows ``{data_source, prompt: [{role, content}], context, reward_model: {ground_truth}, extra_info}``.

    Needs pyarrow (a pandas dependency): ``pip install pyarrow``.
    """
    try:
        import pyarrow.parquet as parquet
    except ImportError as error:
        raise ImportError(f"reading {path} needs pyarrow: pip install pyarrow") from error
    if not Path(path).is_file():
        raise DataFileError(f"{path}: no such file")
    try:
        rows = parquet.read_table(path).to_pylist()
    except Exception as error:  # pyarrow raises ArrowInvalid and OSError subclasses for bad files
        raise DataFileError(f"{path}: not a readable parquet file ({error})") from None
    if not rows:
        raise DataFileError(f"{path}: the file holds no rows")
    samples = []
    for index, row in enumerate(rows):
        messages = _field(row, "prompt", path, index, list)
        users = [message.get("content") for message in messages if isinstance(message, dict) and message.get("role") == "user"]
        if not users or not isinstance(users[-1], str):
            raise DataFileError(f"{path}: record {index} field 'prompt' has no user message with text content")
        reward = _field(row, "reward_model", path, index, dict)
        answers = _golds(_field(reward, "ground_truth", path, index), path, index, "reward_model.ground_truth")
        meta = {"data_source": row.get("data_source"), "extra_info": row.get("extra_info"), "index": index}
        samples.append(Sample(question=users[-1], document=_field(row, "context", path, index, str), answers=answers, task=task, metric="any", meta=meta))
    return samples


# -- HotpotQA and SQuAD into RULER-style QA ----------------------------------------------------------


def _add_random_documents(rng: random.Random, chosen: list[int], pool_size: int, num_docs: int) -> list[int]:
    """``chosen`` plus random other pool indices up to ``num_docs`` (rejection sampling: pools are large)."""
    taken, result = set(chosen), list(chosen)
    while len(result) < num_docs:
        candidate = rng.randrange(pool_size)
        if candidate not in taken:
            taken.add(candidate)
            result.append(candidate)
    return result


def _check_num_docs(num_docs: int, pool_size: int, path: PathLike) -> None:
    positive_int("num_docs", num_docs)
    if num_docs > pool_size:
        raise ValueError(f"num_docs={num_docs} exceeds the {pool_size} distinct documents of {path}")


def _select(items: list, num_questions: int | None, seed: int) -> list[int]:
    indices = list(range(len(items)))
    if num_questions is None or num_questions >= len(indices):
        return indices
    return sorted(random.Random(f"questions/{seed}").sample(indices, num_questions))


def load_hotpotqa(path: PathLike, num_docs: int, seed: int = 0, *, num_questions: int | None = None) -> list[Sample]:
    """RULER-HotpotQA from a HotpotQA distractor JSON file (MemAgent's main task).

    The pool is every unique paragraph ``"{title}\\n{sentences}"``; a question keeps the
    paragraphs of its own distractor context (its gold set, supporting ones first if
    ``num_docs`` is smaller), gains random pool documents up to ``num_docs``, is shuffled
    with a generator seeded by ``(seed, question index)`` and rendered as ``Document {i}:``
    blocks. ``num_questions`` draws that many questions with the seed (the paper used 128).
    """
    data = _expect_list(_read_json(path), path, "a JSON list of HotpotQA questions")
    for index, item in enumerate(data):
        for name, types in (("question", str), ("answer", (str, int, float)), ("context", list)):
            _field(item, name, path, index, types)
        if not all(isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], list) for entry in item["context"]):
            raise DataFileError(f"{path}: record {index} field 'context' must be a list of [title, [sentences]] pairs")
    pool = hotpotqa_pool(data)
    _check_num_docs(num_docs, len(pool), path)
    position = {document: index for index, document in enumerate(pool)}
    samples = []
    for index in _select(data, num_questions, seed):
        item = data[index]
        supporting = {title for title, *_ in item.get("supporting_facts", [])}
        own = sorted(item["context"], key=lambda entry: entry[0] not in supporting)
        gold = list(dict.fromkeys(position[f"{title}\n{''.join(sentences)}"] for title, sentences in own))[:num_docs]
        rng = random.Random(f"hotpotqa/{seed}/{index}")
        chosen = _add_random_documents(rng, gold, len(pool), num_docs)
        rng.shuffle(chosen)
        meta = {"num_docs": num_docs, "index": index, "id": item.get("_id"), "type": item.get("type"), "level": item.get("level"),
                "supporting_titles": sorted(supporting), "doc_indices": chosen, "seed": seed}
        samples.append(Sample(question=item["question"], document=render_documents([pool[i] for i in chosen]),
                              answers=[str(item["answer"])], task="qa_hotpotqa", metric="any", meta=meta))
    return samples


def load_squad(path: PathLike, num_docs: int, seed: int = 0, *, num_questions: int | None = None) -> list[Sample]:
    """RULER-SQuAD (RULER's ``qa_1``) from a SQuAD v2 JSON file; unanswerable questions are skipped.

    As RULER: the pool is every unique paragraph; a question's document set is its own
    paragraph, then the other paragraphs of the same article, then random pool paragraphs,
    up to ``num_docs``; shuffled with the seed and rendered as ``Document {i}:`` blocks.
    """
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataFileError(f"{path}: expected a SQuAD JSON object with a 'data' list of articles")
    questions = []
    for article_index, article in enumerate(data["data"]):
        paragraphs = _field(article, "paragraphs", path, article_index, list)
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = f"article {article_index} paragraph"
            _field(paragraph, "context", f"{path}: {where}", paragraph_index, str)
            for qa_index, qa in enumerate(_field(paragraph, "qas", f"{path}: {where}", paragraph_index, list)):
                location = f"{path}: article {article_index} paragraph {paragraph_index} question"
                if qa.get("is_impossible"):
                    continue
                answers = [answer["text"] for answer in _field(qa, "answers", location, qa_index, list) if isinstance(answer, dict) and "text" in answer]
                if not answers:
                    raise DataFileError(f"{location} {qa_index} field 'answers' has no answer text and is not marked is_impossible")
                questions.append((_field(qa, "question", location, qa_index, str), list(dict.fromkeys(answers)), paragraph["context"],
                                  [other["context"] for other in paragraphs], qa.get("id")))
    if not questions:
        raise DataFileError(f"{path}: no answerable question in the file")
    pool = squad_pool(data)
    _check_num_docs(num_docs, len(pool), path)
    position = {document: index for index, document in enumerate(pool)}
    samples = []
    for index in _select(questions, num_questions, seed):
        question, answers, context, article_contexts, qa_id = questions[index]
        rng = random.Random(f"squad/{seed}/{index}")
        gold = position[context]
        same_article = [i for i in dict.fromkeys(position[text] for text in article_contexts) if i != gold]
        if num_docs - 1 <= len(same_article):
            chosen = [gold, *rng.sample(same_article, num_docs - 1)]
        else:
            chosen = _add_random_documents(rng, [gold, *same_article], len(pool), num_docs)
        rng.shuffle(chosen)
        meta = {"num_docs": num_docs, "index": index, "id": qa_id, "doc_indices": chosen, "seed": seed}
        samples.append(Sample(question=question, document=render_documents([pool[i] for i in chosen]), answers=answers,
                              task="qa_squad", metric="any", meta=meta))
    return samples


# -- LoCoMo ------------------------------------------------------------------------------------------

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


def _locomo_conversations(data: Any, path: PathLike) -> list[tuple[str, dict, list]]:
    """``(sample_id, conversation, qa)`` for either layout."""
    if isinstance(data, dict):
        data = [data]
    data = _expect_list(data, path, "a LoCoMo JSON list of conversations or one conversation object")
    conversations = []
    for index, item in enumerate(data):
        if isinstance(item, dict) and "conversation" in item:  # locomo10.json
            conversation = _field(item, "conversation", path, index, dict)
        elif isinstance(item, dict) and "speaker_a" not in item:
            raise DataFileError(
                f"{path}: record {index} has no field 'conversation' (locomo10.json layout) nor 'speaker_a' (one "
                f"conversation per file) (its fields: {', '.join(item) or 'none'})"
            )
        else:  # one conversation per file, fields at the top level
            conversation = item
        _field(conversation, "speaker_a", path, index, str)
        _field(conversation, "speaker_b", path, index, str)
        sample_id = item.get("sample_id") or (Path(path).stem if len(data) == 1 else f"{Path(path).stem}-{index}")
        conversations.append((sample_id, conversation, _field(item, "qa", path, index, list)))
    return conversations


def render_locomo_conversation(conversation: dict) -> tuple[str, list[dict]]:
    """The conversation as text (sessions in order, each headed by its date) and its turns with metadata."""
    numbers = sorted(int(match.group(1)) for key, value in conversation.items() if (match := _SESSION.fullmatch(key)) and isinstance(value, list))
    blocks, turns = [], []
    for number in numbers:
        date = conversation.get(f"session_{number}_date_time", "")
        lines = [f"Session {number} ({date}):" if date else f"Session {number}:"]
        for turn in conversation[f"session_{number}"]:
            caption = turn.get("blip_caption")
            lines.append(f"{turn['speaker']}: {turn['text']}" + (f" [shares {caption}]" if caption else ""))
            turns.append({"dia_id": turn.get("dia_id"), "speaker": turn["speaker"], "text": turn["text"], "session": number, "date_time": date,
                          **({"blip_caption": caption} if caption else {})})
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), turns


def load_locomo(path: PathLike, *, include_adversarial: bool = False) -> list[Sample]:
    """LoCoMo questions over their rendered conversations (both release layouts).

    Category 5 (adversarial: the conversation does not hold the answer) is left out unless
    ``include_adversarial``; then its golds are LoCoMo's "not mentioned" replies and the trap
    answer goes to ``meta["adversarial_answer"]``. ``meta`` carries the speakers, category,
    evidence dialogue ids with their sessions, speakers and dates, and every turn (shared by
    the records of one conversation) for memory banks that index raw messages.
    """
    return locomo_samples(_read_json(path), path, include_adversarial=include_adversarial)


def locomo_samples(data: Any, path: PathLike, *, include_adversarial: bool = False) -> list[Sample]:
    """:func:`load_locomo` of already-parsed JSON (``path`` names it in errors and sample ids)."""
    samples = []
    for sample_id, conversation, questions in _locomo_conversations(data, path):
        document, turns = render_locomo_conversation(conversation)
        by_id = {turn["dia_id"]: turn for turn in turns}
        for index, qa in enumerate(questions):
            where = f"{path}: conversation {sample_id} qa"
            question = _field(qa, "question", where, index, str)
            category = _field(qa, "category", where, index, int)
            if category == 5 and not include_adversarial:
                continue
            if category == 5:
                answers = list(LOCOMO_NO_ANSWER)
            else:
                answers = _golds(_field(qa, "answer", where, index), where, index, "answer")
            evidence = [f"D{session}:{turn}" for entry in qa.get("evidence", []) for session, turn in _DIA_ID.findall(str(entry))]
            found = [by_id[dia_id] for dia_id in evidence if dia_id in by_id]
            meta = {
                "sample_id": sample_id, "qa_index": index, "category": category, "category_name": LOCOMO_CATEGORIES.get(category, "unknown"),
                "evidence": evidence, "evidence_sessions": sorted({int(dia_id[1:].split(":")[0]) for dia_id in evidence}),
                "evidence_speakers": sorted({turn["speaker"] for turn in found}), "evidence_dates": sorted({turn["date_time"] for turn in found}),
                "speaker_a": conversation["speaker_a"], "speaker_b": conversation["speaker_b"], "turns": turns,
            }
            if "adversarial_answer" in qa:
                meta["adversarial_answer"] = qa["adversarial_answer"]
            samples.append(Sample(question=question, document=document, answers=answers, task="locomo", metric="any", meta=meta))
    return samples


# -- sniffing --------------------------------------------------------------------------------------


def _needs(option: str, value: Any, path: PathLike, kind: str) -> None:
    if value is None:
        raise ValueError(f"{path} is a {kind} file: pass {option}= to build its documents")


def load_records(
    path: PathLike,
    *,
    task: str | None = None,
    pool: PathLike | Sequence[str] | None = None,
    num_docs: int | None = None,
    seed: int = 0,
    include_adversarial: bool = False,
) -> list[Sample]:
    """Load any supported file, telling the format by extension and first record.

    ``.parquet``: MemAgent training rows. JSON lines: RULER (``input`` + ``outputs``) or
    records saved with :meth:`Sample.to_dict`. JSON: MemAgent ``eval_{N}.json`` (``context``
    + ``input`` + ``answers``), LoCoMo (``conversation`` or ``speaker_a`` + ``qa``), HotpotQA
    (``question`` + ``answer`` + ``context``; needs ``num_docs``), SQuAD (``data``; needs
    ``num_docs``) or saved records. Options go to the loader that takes them.
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return load_memagent_train_parquet(path)
    if suffix == ".jsonl":
        first = _read_json_lines(path)[0]
        if isinstance(first, dict) and {"question", "document", "answers", "task"} <= set(first):
            return _saved_records(_read_json_lines(path), path)
        if isinstance(first, dict) and "input" in first and "outputs" in first:
            return load_ruler_jsonl(path, task)
        if isinstance(first, dict) and "input" in first and "answers" in first:
            return load_memagent_eval(path, pool)
        raise DataFileError(f"{path}: record 0 is neither a RULER record (input, outputs) nor a saved Sample (question, document, answers, task)")
    data = _read_json(path)
    if isinstance(data, dict) and "data" in data:
        _needs("num_docs", num_docs, path, "SQuAD")
        return load_squad(path, num_docs, seed)
    if isinstance(data, dict) and ("speaker_a" in data or "conversation" in data or "qa" in data):
        return load_locomo(path, include_adversarial=include_adversarial)
    if isinstance(data, dict):
        raise DataFileError(
            f"{path}: a JSON object that is neither SQuAD (a 'data' key) nor LoCoMo ('conversation', 'speaker_a' or 'qa'); "
            f"its keys: {', '.join(map(str, data)) or 'none'}"
        )
    first = _expect_list(data, path, "a JSON list of records or a JSON object (SQuAD, LoCoMo)")[0]
    keys = set(first) if isinstance(first, dict) else set()
    if {"question", "document", "answers", "task"} <= keys:
        return _saved_records(data, path)
    if "conversation" in keys or "qa" in keys:  # LoCoMo, both layouts (its loader names a missing field)
        return load_locomo(path, include_adversarial=include_adversarial)
    if {"context", "input"} <= keys:
        return load_memagent_eval(path, pool, **({"task": task} if task else {}))
    if {"question", "answer", "context"} <= keys:
        _needs("num_docs", num_docs, path, "HotpotQA")
        return load_hotpotqa(path, num_docs, seed)
    raise DataFileError(
        f"{path}: record 0 has fields {', '.join(map(str, keys)) or 'none'}; expected a MemAgent eval record (context, input, answers), "
        "a LoCoMo conversation, a HotpotQA question (question, answer, context) or a saved Sample (question, document, answers, task)"
    )


def _saved_records(records: Iterable[Any], path: PathLike) -> list[Sample]:
    samples = []
    for index, record in enumerate(records):
        for name in ("question", "document", "answers", "task"):
            _field(record, name, path, index)
        try:
            samples.append(Sample.from_dict(record))
        except (TypeError, ValueError) as error:
            raise DataFileError(f"{path}: record {index}: {error}") from None
    return samples

