"""Seeded LoCoMo-shaped conversations: two speakers, dated sessions, planted facts among small talk.

Training data for the memory-tool graphs with nothing to download. Each conversation is
written in LoCoMo's own JSON layout (``locomo10.json``: ``sample_id``, ``conversation`` with
``speaker_a``/``speaker_b``, ``session_N`` turns with ``dia_id`` ``"D<session>:<turn>"`` and
``session_N_date_time``, and ``qa``), so :func:`~langgraph_memagent.evals.loaders.load_records`
and every graph read it unchanged.

Facts are planted in single turns among small talk; each gets a question in one of LoCoMo's
categories (the loader's numbering) with its gold answer and evidence turn ids:

* single-hop (4): "Where did Maya travel to?", one turn;
* multi-hop (1): a relative's city in one session, a visit to that relative in a later one;
  "Which city is Maya flying to?" needs both turns;
* temporal (2): "I ran my first marathon yesterday" in a session dated 8 May 2023;
  "When did Maya run a marathon?" is answered "7 May, 2023", LoCoMo's date style;
* open-domain (3): an inference from a stated fact ("I'm allergic to cats" -> "Would Maya
  want a cat as a pet?" "No"; "I've always wanted a dog" -> "Yes", equally often).

With ``wording="varied"`` each fact is said, and its question asked, in one of several
phrasings, often inside a longer turn, and an event happened one to three days before its
session ("two days ago"): closer to LoCoMo, whose questions paraphrase their evidence. The
facts and evidence ids stay those of the plain wording with the same seed.

The other speaker often states the same kind of fact with another value, so an answer must
come from the right speaker. Names, places and pets come from two disjoint pools:
``entities="train"`` for training sets, ``"test"`` for held-out ones, which should also use
another seed. Conversation ``i`` of a call is drawn from a generator seeded with
``(seed, entities, i)``: same arguments, same bytes.

>>> conversation, = generate_conversations(1, seed=7)
>>> conversation["qa"][0]["evidence"][0] in {turn["dia_id"] for key, turns in conversation["conversation"].items()
...     if key.startswith("session_") and isinstance(turns, list) for turn in turns}
True
>>> sorted({qa["category"] for qa in generate_conversations(4, seed=7)[2]["qa"]}) != []
True
"""

from __future__ import annotations

import datetime
import json
import random
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..agents.atomic_files import replacing


ENTITY_POOLS = ("train", "test")
CONVERSATIONS_TASK = "conversations"
"""The trainer's ``task`` name for these conversations."""

# Disjoint vocabularies: a held-out conversation never names a person, place or pet a training one does.
_NAMES = {
    "train": ["Maya", "Jon", "Gina", "Omar", "Lena", "Victor", "Priya", "Tomas", "Aisha", "Ben", "Clara", "Dmitri", "Elena", "Felix", "Hana", "Ivan"],
    "test": ["Nora", "Raj", "Sofia", "Kenji", "Amara", "Lucas", "Ingrid", "Mateo", "Zara", "Oscar", "Yuki", "Pablo", "Leila", "Hugo", "Tara", "Emil"],
}
_PLACES = {
    "train": ["Lisbon", "Denver", "Kyoto", "Nairobi", "Oslo", "Perth", "Seville", "Toronto", "Hanoi", "Dublin", "Quito", "Krakow"],
    "test": ["Porto", "Austin", "Osaka", "Accra", "Bergen", "Hobart", "Granada", "Calgary", "Manila", "Galway", "Lima", "Gdansk"],
}
_PETS = {
    "train": ["Biscuit", "Pepper", "Mochi", "Rocket", "Juniper", "Waffles", "Ziggy", "Nacho"],
    "test": ["Pickle", "Cosmo", "Tofu", "Bandit", "Clover", "Noodle", "Ripley", "Sprout"],
}
_RELATIVES = ["sister", "brother", "cousin", "aunt", "uncle"]
_INSTRUMENTS = ["violin", "guitar", "piano", "cello", "drums", "flute", "saxophone", "ukulele"]
_FOODS = ["sushi", "lasagna", "tacos", "ramen", "paella", "dumplings", "curry", "falafel"]
_JOBS = ["nurse", "architect", "teacher", "chef", "pilot", "librarian", "carpenter", "photographer"]
_ANIMALS = ["dog", "cat", "rabbit", "parrot"]
# (past tense, base form) of dated events.
_EVENTS = [
    ("ran my first marathon", "run a marathon"),
    ("adopted a kitten", "adopt a kitten"),
    ("sold my old car", "sell the old car"),
    ("started pottery classes", "start pottery classes"),
    ("passed my driving test", "pass the driving test"),
    ("planted a vegetable garden", "plant a vegetable garden"),
    ("joined a rock climbing gym", "join a rock climbing gym"),
    ("moved into a new apartment", "move into a new apartment"),
]
# Small talk in exchanges (a line and its reply): an opener, fillers, a closer per session.
_OPENERS = [
    ("Hey {other}! Good to hear from you. How have you been?", "Pretty good, thanks! Busy week, but nothing dramatic."),
    ("Hi {other}, it's been a while! What's new?", "Hi! Not too much, just the usual routine."),
    ("Morning {other}! How's your week going?", "Good so far, thanks for asking!"),
]
_FILLERS = [
    ("Did you do anything fun over the weekend?", "Not much, I mostly stayed in and read a book."),
    ("The weather has been lovely lately, hasn't it?", "Yes! I went for a long walk this morning."),
    ("Have you watched anything good recently?", "I started a documentary series about oceans. It's fascinating."),
    ("How is your family doing?", "Everyone is well, thanks for asking."),
    ("I tried a new coffee place near my office.", "Oh nice, I'm always looking for a good coffee spot."),
    ("I've been trying to get more sleep lately.", "Good idea. I always feel better after a full night's sleep."),
    ("Work has been keeping me really busy.", "I hope things calm down for you soon."),
    ("Any plans for the holidays?", "Nothing fixed yet, maybe a quiet few days at home."),
]
_CLOSERS = [
    ("Anyway, it's always nice to chat with you.", "Same here! Let's catch up again soon."),
    ("I should get going. Talk soon!", "Definitely. Take care, {other}!"),
]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


# Each fact kind's phrasings of its turn(s) and of its question. The first is the plain wording;
# wording="varied" draws any, closer to LoCoMo's free paraphrase, and may wrap a fact turn in
# other sentences, so the fact sits inside a longer turn as LoCoMo's do.
_FACT_TURNS = {
    "travel": [["I just got back from a week in {place}! The food was amazing.",
                "My trip to {place} was unforgettable. I spent every day walking around the old town.",
                "Finally home again after ten days exploring {place}. I already miss the views.",
                "{place} was even better than the photos. I'd go back in a heartbeat."]],
    "pet": [["We got a {animal}! We named him {pet}.",
             "Meet {pet}, the newest member of our family: a little {animal} we brought home on Sunday.",
             "Our new {animal} {pet} has been chewing everything in sight, but we love him."]],
    "job": [["Big news: I start a new job as {a_job} next month.",
             "I accepted an offer to work as {a_job}! I'm nervous but excited.",
             "After all those interviews, I'm finally going to be {a_job}. I start next month!"]],
    "instrument": [["I've been learning to play the {instrument}. My neighbours are patient.",
                    "My {instrument} lessons are going well. I can finally get through a whole song.",
                    "I practise the {instrument} every evening now, and my teacher says I'm improving."]],
    "food": [["Honestly, {food} is my favourite food. I could eat it every day.",
              "Nothing beats a plate of {food}. It's my all-time favourite.",
              "If I could only eat one dish for the rest of my life, it would be {food}."]],
    "relative": [["My {relative} just moved to {place} for work.",
                  "My {relative} took a job in {place} and moved there last month.",
                  "Did I tell you my {relative} lives in {place} now?"],
                 ["I'm flying out to visit my {relative} next week!",
                  "Next week I'm off to see my {relative}. The flights are booked.",
                  "I finally booked a trip to see my {relative}. I leave next week."]],
    "event": [["Guess what, I {past} {when}!",
               "So {when} I finally {past}. I still can't quite believe it.",
               "Oh, and I {past} {when}, which was a big step for me."]],
    # pet_wish, by its answer:
    "wish": [["I've always wanted a {animal}. I'd adopt one tomorrow if my landlord allowed it.",
              "Every time I see a {animal} at the shelter I want to take it home.",
              "Having a {animal} of my own has been my dream since I was a kid."]],
    "allergy": [["I'm allergic to {animal}s, so I sneeze whenever I visit friends who have one.",
                 "I can't be around {animal}s for long. My eyes start watering straight away.",
                 "{Animal}s and I don't get along: I get hives every time I pet one."]],
}
_FACT_QUESTIONS = {
    "travel": ["Where did {name} travel to?", "Which city did {name} recently visit?", "Where did {name} go on holiday?"],
    "pet": ["What is the name of {name}'s {animal}?", "What did {name} name the new {animal}?", "What is {name}'s {animal} called?"],
    "job": ["What is {name}'s new job?", "What job did {name} accept?", "What will {name} work as from next month?"],
    "instrument": ["Which instrument is {name} learning to play?", "What instrument has {name} been practising?", "What does {name} take lessons in?"],
    "food": ["What is {name}'s favourite food?", "Which dish does {name} love most?", "What could {name} eat every day?"],
    "relative": ["Which city is {name} flying to next week?", "Which city will {name} visit next week?", "Where is {name} travelling to next week?"],
    "event": ["When did {name} {base}?", "On what date did {name} {base}?", "What day did {name} {base}?"],
    "pet_wish": ["Would {name} want a {animal} as a pet?", "Would {name} likely adopt a {animal}?", "Is {name} likely to get a {animal}?"],
}
# How long before the session a dated event happened, as the speaker says it (the plain wording: yesterday).
_WHEN = [(1, "yesterday"), (2, "two days ago"), (3, "three days ago")]
_LEADS = ["", "", "Things have been hectic lately.", "Oh, I almost forgot to tell you!", "Sorry I went quiet for a few days."]
_TAILS = ["", "", "Anyway, how have you been?", "Can't wait to tell you more about it.", "What about you, anything new?"]
WORDINGS = ("plain", "varied")


def _article(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _worded(kind: str, fact: dict[str, Any], rng: random.Random | None) -> dict[str, Any]:
    """``fact`` with its turns and question: the plain wording without ``rng``, else phrasings drawn from it."""
    def choose(options: Sequence[Any]) -> Any:
        return options[0] if rng is None else rng.choice(options)

    slots = dict(fact["slots"])
    days_before = None
    if kind == "event":
        days_before, slots["when"] = choose(_WHEN)
    if kind == "pet_wish":
        slots["Animal"] = slots["animal"].capitalize()
    turns = []
    for phrasings in _FACT_TURNS[("wish" if slots["wants"] else "allergy") if kind == "pet_wish" else kind]:
        text = choose(phrasings).format(**slots)
        turns.append(text if rng is None else " ".join(part for part in (rng.choice(_LEADS), text, rng.choice(_TAILS)) if part))
    # "{name}" stays a placeholder: the speaker is known only once the fact is planted.
    question = choose(_FACT_QUESTIONS[kind]).format(name="{name}", **slots)
    return {**fact, "turns": turns, "question": question, "days_before": days_before}


def _date_time(moment: datetime.datetime) -> str:
    """LoCoMo's session stamp, e.g. ``"4:04 pm on 20 January, 2023"``."""
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d} {'am' if moment.hour < 12 else 'pm'} on {_date(moment.date())}"


def _date(day: datetime.date) -> str:
    """LoCoMo's answer style for dates, e.g. ``"19 January, 2023"``."""
    return f"{day.day} {_MONTHS[day.month - 1]}, {day.year}"


def _fact(kind: str, rng: random.Random, entities: str, taken: set[str]) -> dict[str, Any]:
    """One plantable fact: its values (``slots``), answer and category; :func:`_worded` words it."""

    def pick(pool: Sequence[str]) -> str:
        value = rng.choice([item for item in pool if item not in taken] or list(pool))
        taken.add(value)
        return value

    if kind == "travel":
        place = pick(_PLACES[entities])
        return {"slots": {"place": place}, "answer": place, "category": 4}
    if kind == "pet":
        pet, animal = pick(_PETS[entities]), rng.choice(_ANIMALS)
        return {"slots": {"pet": pet, "animal": animal}, "answer": pet, "category": 4}
    if kind == "job":
        job = pick(_JOBS)
        return {"slots": {"job": job, "a_job": _article(job)}, "answer": job, "category": 4}
    if kind == "instrument":
        instrument = pick(_INSTRUMENTS)
        return {"slots": {"instrument": instrument}, "answer": instrument, "category": 4}
    if kind == "food":
        food = pick(_FOODS)
        return {"slots": {"food": food}, "answer": food, "category": 4}
    if kind == "relative":
        relative, place = rng.choice(_RELATIVES), pick(_PLACES[entities])
        return {"slots": {"relative": relative, "place": place}, "answer": place, "category": 1}
    if kind == "event":
        past, base = rng.choice(_EVENTS)
        return {"slots": {"past": past, "base": base}, "answer": None, "category": 2}  # the date is known once planted
    if kind == "pet_wish":
        # Yes or No by a coin: with one answer for all, a policy scored by answering it blind.
        animal, wants = rng.choice(["cat", "dog"]), rng.random() < 0.5
        return {"slots": {"animal": animal, "wants": wants}, "answer": "Yes" if wants else "No", "category": 3}
    raise ValueError(f"unknown fact kind {kind!r}")


_FACT_KINDS = ("travel", "pet", "job", "instrument", "food", "relative", "event", "pet_wish")


def generate_conversation(
    index: int, *, seed: int, entities: str = "train", sessions: tuple[int, int] = (4, 8), turns: tuple[int, int] = (6, 10), facts: int = 6,
    wording: str = "plain",
) -> dict[str, Any]:
    """Conversation ``index`` of the seeded set, in ``locomo10.json``'s record layout (see the module docstring).

    ``sessions`` and ``turns`` are (fewest, most) per conversation and per session; ``facts``
    is how many kinds of fact are planted (up to 8), each with its question. ``wording="varied"``
    says each fact and asks each question in one of several phrasings, often inside a longer
    turn, and dates events one to three days before their session. Its facts, speakers, sessions
    and evidence ids are those of the plain conversation with the same arguments: only the words
    (and an event's date) change, so the two wordings can be compared question by question.

    >>> plain, varied = (generate_conversation(0, seed=7, wording=w) for w in WORDINGS)
    >>> [qa["evidence"] for qa in plain["qa"]] == [qa["evidence"] for qa in varied["qa"]]
    True
    >>> [qa["question"] for qa in plain["qa"]] != [qa["question"] for qa in varied["qa"]]
    True
    """
    # Two sessions at least: a multi-hop fact spans two.
    for name, (low, high), least in (("sessions", sessions, 2), ("turns", turns, 1)):
        if not least <= low <= high:
            raise ValueError(f"{name} must be (fewest, most) with {least} <= fewest <= most, got {(low, high)!r}")
    if not 1 <= facts <= len(_FACT_KINDS):
        raise ValueError(f"facts must be between 1 and {len(_FACT_KINDS)}, got {facts!r}")
    if wording not in WORDINGS:
        raise ValueError(f"wording must be one of {list(WORDINGS)}, got {wording!r}")
    rng = random.Random(zlib.crc32(f"{seed}/{entities}/{index}".encode()))
    speakers = rng.sample(_NAMES[entities], 2)
    session_count = rng.randint(*sessions)
    start = datetime.datetime(2022, 1, 1, 9) + datetime.timedelta(days=rng.randrange(730), minutes=rng.randrange(600))
    taken: set[str] = set()
    kinds = rng.sample(_FACT_KINDS, facts)
    # Each planted fact: who says it and in which session; multi-turn facts span two sessions.
    plan: list[tuple[int, str, str, dict[str, Any]]] = []
    for kind in kinds:
        speaker = rng.choice(speakers)
        fact = _worded(kind, _fact(kind, rng, entities, taken), None)
        first = rng.randrange(session_count - (len(fact["turns"]) > 1))
        plan.append((first, speaker, kind, fact))
        if rng.random() < 0.5 and kind not in ("relative", "event"):
            # The other speaker states the same kind of fact with another value: the answer needs the right speaker.
            plan.append((rng.randrange(session_count), speakers[speakers[0] == speaker], kind, _worded(kind, _fact(kind, rng, entities, taken), None)))
    if wording == "varied":
        # Its own generator: the plain draws above and below stay as they are, so both wordings share every fact.
        words = random.Random(zlib.crc32(f"{seed}/{entities}/{index}/varied".encode()))
        plan = [(session, speaker, kind, _worded(kind, fact, words)) for session, speaker, kind, fact in plan]
    conversation: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    evidence = [[""] * len(fact["turns"]) for *_, fact in plan]  # dia ids of each fact's turns
    pending: dict[int, list[tuple[int, int]]] = {}  # session -> (fact index, part)
    for number, (session, _speaker, _kind, fact) in enumerate(plan):
        pending.setdefault(session, []).append((number, 0))
        if len(fact["turns"]) > 1:
            pending.setdefault(rng.randrange(session + 1, session_count), []).append((number, 1))
    moment, session_dates = start, []
    for session in range(session_count):
        moment += datetime.timedelta(days=rng.randint(3, 20), minutes=rng.randrange(-120, 120))
        session_dates.append(moment.date())
        facts_here = pending.get(session, [])
        length = rng.randint(*turns) - len(facts_here)
        lines = list(rng.choice(_OPENERS))
        while len(lines) < max(length - 2, 2):
            lines += rng.choice(_FILLERS)
        lines += rng.choice(_CLOSERS)
        speaker_of = [speakers[(turn + session) % 2] for turn in range(len(lines))]
        # Facts go between the opener and the closer, each said by its own speaker.
        for number, part in facts_here:
            slot = rng.randint(2, len(lines) - 2)
            lines.insert(slot, plan[number][3]["turns"][part])
            speaker_of.insert(slot, plan[number][1])
        for number, part in facts_here:  # turn ids once every fact is in
            evidence[number][part] = f"D{session + 1}:{lines.index(plan[number][3]['turns'][part]) + 1}"
        conversation[f"session_{session + 1}_date_time"] = _date_time(moment)
        conversation[f"session_{session + 1}"] = [
            {"speaker": who, "dia_id": f"D{session + 1}:{turn + 1}", "text": text.format(other=speakers[who == speakers[0]])}
            for turn, (who, text) in enumerate(zip(speaker_of, lines))
        ]
    qa = []
    for (_session, speaker, _kind, fact), dia_ids in zip(plan, evidence):
        answer = fact["answer"]
        if fact["category"] == 2:  # "yesterday" (or some days ago), said in the session of the fact's turn
            answer = _date(session_dates[int(dia_ids[0][1:].split(":")[0]) - 1] - datetime.timedelta(days=fact["days_before"]))
        qa.append({"question": fact["question"].format(name=speaker), "answer": answer, "evidence": dia_ids, "category": fact["category"]})
    return {"sample_id": f"synthetic-{entities}-{seed}-{index}", "conversation": conversation, "qa": qa}


def generate_conversations(count: int, *, seed: int, entities: str = "train", **options: Any) -> list[dict[str, Any]]:
    """``count`` seeded conversations (``options``: ``sessions``, ``turns``, ``facts``, ``wording`` of :func:`generate_conversation`)."""
    if entities not in ENTITY_POOLS:
        raise ValueError(f"entities must be one of {list(ENTITY_POOLS)}, got {entities!r}")
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    return [generate_conversation(index, seed=seed, entities=entities, **options) for index in range(count)]


def write_conversations(path: str | Path, conversations: Sequence[dict[str, Any]]) -> Path:
    """Write ``conversations`` as one ``locomo10.json``-layout file, atomically; returns the path."""
    path = Path(path)
    with replacing(path) as out:
        json.dump(list(conversations), out, ensure_ascii=False, indent=1)
    return path


__all__ = ["CONVERSATIONS_TASK", "ENTITY_POOLS", "WORDINGS", "generate_conversation", "generate_conversations", "write_conversations"]
