"""Synthetic multi-hop QA in HotpotQA's shape, with no external data.

A seeded fictional world (countries, cities, people, companies, bands, films) is rendered
as one Wikipedia-like paragraph per entity, titled by the entity's name. Questions need two
paragraphs, as HotpotQA's two kinds do:

* bridge -- "In which city was the founder of Orvane Systems born?": the company's
  paragraph names the founder, the founder's paragraph names the city;
* comparison -- "Who was born first, A or B?", "Are A and B of the same nationality?",
  "Which company was founded earlier, X or Y?", "Which film was released first, X or Y?".

Names share parts on purpose (people share surnames, companies share a name root, bands an
adjective), and a question's distractors prefer entities that share a name part with its
gold entities, so the gold paragraphs cannot be found by a name alone.

Two layouts over the same world (task names in :data:`~langgraph_memagent.evals.ruler.TASKS`):

* ``qa`` -- RULER's recipe: the two gold paragraphs plus random other paragraphs until the
  length budget is reached;
* ``qa_hotpotqa_synthetic`` -- MemAgent's RULER-HotpotQA recipe: the question's own
  10-paragraph set (2 gold + 8 similar distractors, like a HotpotQA distractor context)
  plus random other paragraphs up to ``num_docs`` (50 ... 25600) or to ``target_tokens``.

Both shuffle with the seed and render ``Document {i}:\\n{title}\\n{text}`` blocks joined by
blank lines; ``meta`` keeps the gold titles and the supporting sentences.

>>> from langgraph_memagent.agents.tokenizers import TiktokenCodec
>>> import tiktoken
>>> from langgraph_memagent.evals import generate_task
>>> codec = TiktokenCodec(tiktoken.Encoding("bytes", pat_str=r"\\S+|\\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}))
>>> sample, = generate_task("qa_hotpotqa_synthetic", None, codec=codec, num_docs=50, seed=7)
>>> sample.meta["num_docs"], sample.document.startswith("Document 1:\\n")
(50, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from ..agents.tokenizers import TokenCodec, encode_long
from .records import Sample
from .templates import fit_sample, prompt_template, words


DOCUMENT_TEMPLATE = "Document {index}:\n{text}"
QuestionKind = Literal["bridge", "comparison"]
# HotpotQA's distractor setting: 10 paragraphs per question, 2 of them gold.
OWN_PARAGRAPHS = 10
MIN_DOCS, MAX_DOCS = 2, 25_600 * 4

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")
_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "r", "s", "st", "t", "tr", "v", "z", "th", "sh")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y")
_CODAS = ("", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rk", "v")
_COMPANY_SUFFIXES = ("Systems", "Holdings", "Industries", "Labs", "Group", "Works", "Dynamics", "Partners", "Foods", "Motors")
_INDUSTRIES = ("software", "shipping", "textile", "mining", "brewing", "aerospace", "publishing", "pharmaceutical", "furniture", "telecommunications")
_GENRES_MUSIC = ("rock", "folk", "jazz", "synth-pop", "punk", "blues", "indie", "soul", "metal", "ambient")
_GENRES_FILM = ("drama", "comedy", "thriller", "documentary", "western", "science fiction", "horror", "musical", "war", "romance")
_FIELDS = ("economics", "architecture", "chemistry", "law", "music", "painting", "engineering", "history", "medicine", "philosophy")


def render_documents(texts: list[str]) -> str:
    """RULER / MemAgent QA context: ``Document {i}:\\n{text}`` blocks (i from 1) joined by blank lines.

    >>> render_documents(["A\\nx", "B\\ny"])
    'Document 1:\\nA\\nx\\n\\nDocument 2:\\nB\\ny'
    """
    return "\n\n".join(DOCUMENT_TEMPLATE.format(index=index, text=text) for index, text in enumerate(texts, 1))


@dataclass
class Entity:
    """One thing of the world, with the paragraph that describes it."""

    kind: str
    name: str
    facts: dict = field(default_factory=dict)
    sentences: list[str] = field(default_factory=list)
    name_parts: tuple[str, ...] = ()

    @property
    def paragraph(self) -> str:
        return f"{self.name}\n{' '.join(self.sentences)}"


class World:
    """A consistent fictional world of about ``size`` entities, one paragraph each.

    Each entity is described only in its own paragraph (other paragraphs may mention it),
    so every fact a question needs has exactly one source.
    """

    def __init__(self, rng: random.Random, size: int) -> None:
        self.rng = rng
        self.names: set[str] = set()
        self.entities: list[Entity] = []
        self.countries = [self._country() for _ in range(12)]
        remaining = max(size - len(self.countries), 20)
        self.cities = [self._city() for _ in range(max(4, remaining * 15 // 100))]
        for country in self.countries:
            capital = rng.choice([city for city in self.cities if city.facts["country"] is country] or self.cities)
            country.sentences.append(f"Its capital and largest city is {capital.name}.")
        surnames = [self._word(2, 3) for _ in range(max(2, remaining * 40 // 300))]
        self.people = [self._person(surnames) for _ in range(max(6, remaining * 40 // 100))]
        self._unassigned = list(self.people)
        rng.shuffle(self._unassigned)
        roots = [self._word(2, 3) for _ in range(max(2, remaining * 15 // 200))]
        self.companies = [self._company(roots) for _ in range(max(4, remaining * 15 // 100))]
        adjectives = [rng.choice(words("adjectivelist.txt")).capitalize() for _ in range(max(2, remaining * 15 // 200))]
        self.bands = [self._band(adjectives) for _ in range(max(4, remaining * 15 // 100))]
        self.films = [self._film() for _ in range(max(4, remaining * 15 // 100))]

    # -- names -------------------------------------------------------------------------
    def _word(self, low: int, high: int) -> str:
        syllables = self.rng.randint(low, high)
        onsets, vowels = self.rng.choices(_ONSETS, k=syllables), self.rng.choices(_VOWELS, k=syllables)
        return ("".join(onset + vowel for onset, vowel in zip(onsets, vowels)) + self.rng.choice(_CODAS)).capitalize()

    def _unique(self, make) -> str:
        while (name := make()) in self.names:
            pass
        self.names.add(name)
        return name

    def _add(self, entity: Entity) -> Entity:
        self.entities.append(entity)
        return entity

    # -- entities ------------------------------------------------------------------------
    def _country(self) -> Entity:
        name = self._unique(lambda: self._word(2, 3).rstrip("aeiouy") + "ia")
        nationality = name[:-1] + "an"
        entity = Entity("country", name, {"nationality": nationality}, [f"{name} is a country whose citizens are called {nationality}s."])
        return self._add(entity)

    def _city(self) -> Entity:
        rng = self.rng
        name = self._unique(lambda: self._word(2, 3))
        country, founded = rng.choice(self.countries), rng.randint(800, 1850)
        river = self._word(2, 2)
        sentences = [
            f"{name} is a city in {country.name}, on the banks of the {river} River.",
            f"It was founded in {founded} and has a population of about {rng.randint(20, 2000) * 1000:,}.",
            f"Its main industries are {rng.choice(_INDUSTRIES)} and {rng.choice(_INDUSTRIES)}.",
        ]
        return self._add(Entity("city", name, {"country": country, "founded": founded}, sentences, (name,)))

    def _person(self, surnames: list[str]) -> Entity:
        rng = self.rng
        surname = rng.choice(surnames)
        name = self._unique(lambda: f"{self._word(1, 2)} {surname}")
        year, month, day = rng.randint(1900, 1985), rng.randint(1, 12), rng.randint(1, 28)
        city = rng.choice(self.cities)
        nationality = city.facts["country"].facts["nationality"]
        study_city, award_year = rng.choice(self.cities), year + rng.randint(30, 45)
        sentences = [
            f"{name} (born {day} {_MONTHS[month - 1]} {year} in {city.name}) is a {nationality} {{occupation}}.",
            f"{surname} studied {rng.choice(_FIELDS)} at the University of {study_city.name}.",
            f"In {award_year}, {surname} received the {self._word(2, 2)} Prize for lifetime achievement.",
        ]
        facts = {"birth": (year, month, day), "birth_city": city, "nationality": nationality, "occupation": "writer"}
        return self._add(Entity("person", name, facts, sentences, (surname,)))

    def _assign(self, person: Entity, occupation: str, sentence: str) -> None:
        person.facts["occupation"] = occupation
        person.sentences.insert(1, sentence)

    def _free_person(self) -> Entity:
        # Each person has at most one role, so "the founder of X" never also directs a film.
        if not self._unassigned:
            self._unassigned.append(self._person([self._word(2, 3)]))
            self.people.append(self._unassigned[-1])
        return self._unassigned.pop()

    def _company(self, roots: list[str]) -> Entity:
        rng = self.rng
        root = rng.choice(roots)
        name = self._unique(lambda: f"{root} {rng.choice(_COMPANY_SUFFIXES)}")
        founder = self._free_person()
        founded = founder.facts["birth"][0] + rng.randint(22, 45)
        city, industry = rng.choice(self.cities), rng.choice(_INDUSTRIES)
        sentences = [
            f"{name} is a {industry} company headquartered in {city.name}.",
            f"It was founded in {founded} by {founder.name}.",
            f"The company employs about {rng.randint(2, 400) * 50:,} people.",
        ]
        self._assign(founder, "entrepreneur", f"{founder.name.split()[-1]} founded {name} in {founded}.")
        return self._add(Entity("company", name, {"founder": founder, "founded": founded, "headquarters": city}, sentences, (root,)))

    def _band(self, adjectives: list[str]) -> Entity:
        rng = self.rng
        adjective = rng.choice(adjectives)
        name = self._unique(lambda: f"The {adjective} {rng.choice(words('nounlist.txt')).capitalize()}s")
        singer, city = self._free_person(), rng.choice(self.cities)
        formed = singer.facts["birth"][0] + rng.randint(16, 30)
        sentences = [
            f"{name} are a {rng.choice(_GENRES_MUSIC)} band formed in {city.name} in {formed}.",
            f"The band is fronted by lead singer {singer.name}.",
            f"Their debut album, {self._word(2, 3)}, was released in {formed + rng.randint(1, 3)}.",
        ]
        self._assign(singer, "singer", f"{singer.name.split()[-1]} is best known as the lead singer of {name}.")
        return self._add(Entity("band", name, {"singer": singer, "formed": formed}, sentences, (adjective,)))

    def _film(self) -> Entity:
        rng = self.rng
        name = self._unique(lambda: f"{rng.choice(words('adjectivelist.txt')).capitalize()} {self._word(2, 3)}")
        director, city = self._free_person(), rng.choice(self.cities)
        released = director.facts["birth"][0] + rng.randint(25, 50)
        sentences = [
            f"{name} is a {released} {rng.choice(_GENRES_FILM)} film directed by {director.name}.",
            f"It was shot on location in {city.name} and runs {rng.randint(80, 170)} minutes.",
        ]
        self._assign(director, "film director", f"{director.name.split()[-1]} directed the film {name}, released in {released}.")
        return self._add(Entity("film", name, {"director": director, "released": released}, sentences, (name.split()[0],)))

    def finish(self) -> None:
        """Fill the occupation placeholder once every role is assigned."""
        for person in self.people:
            person.sentences[0] = person.sentences[0].replace("{occupation}", person.facts["occupation"])


@dataclass
class Question:
    text: str
    answer: str
    kind: QuestionKind
    gold: list[Entity]
    # One sentence per gold paragraph: the facts the answer is derived from.
    supporting: list[tuple[str, str]]
    bridge: str | None = None


def _bridge(world: World, rng: random.Random) -> Question:
    pick = rng.randrange(4)
    if pick == 0:
        company = rng.choice(world.companies)
        founder = company.facts["founder"]
        return Question(f"In which city was the founder of {company.name} born?", founder.facts["birth_city"].name, "bridge",
                        [company, founder], [(company.name, company.sentences[1]), (founder.name, founder.sentences[0])], founder.name)
    if pick == 1:
        film = rng.choice(world.films)
        director = film.facts["director"]
        return Question(f"In what year was the director of {film.name} born?", str(director.facts["birth"][0]), "bridge",
                        [film, director], [(film.name, film.sentences[0]), (director.name, director.sentences[0])], director.name)
    if pick == 2:
        band = rng.choice(world.bands)
        singer = band.facts["singer"]
        return Question(f"What is the nationality of the lead singer of {band.name}?", singer.facts["nationality"], "bridge",
                        [band, singer], [(band.name, band.sentences[1]), (singer.name, singer.sentences[0])], singer.name)
    company = rng.choice(world.companies)
    city = company.facts["headquarters"]
    return Question(f"In which country is the city where {company.name} is headquartered?", city.facts["country"].name, "bridge",
                    [company, city], [(company.name, company.sentences[0]), (city.name, city.sentences[0])], city.name)


def _two(entities: list[Entity], rng: random.Random, differ) -> tuple[Entity, Entity]:
    while True:
        first, second = rng.sample(entities, 2)
        if differ(first, second):
            return first, second


def _comparison(world: World, rng: random.Random) -> Question:
    pick = rng.randrange(4)
    if pick == 0:
        first, second = _two(world.people, rng, lambda a, b: a.facts["birth"] != b.facts["birth"])
        earlier = min((first, second), key=lambda person: person.facts["birth"])
        return Question(f"Who was born first, {first.name} or {second.name}?", earlier.name, "comparison",
                        [first, second], [(first.name, first.sentences[0]), (second.name, second.sentences[0])])
    if pick == 1:
        same = rng.random() < 0.5  # balanced yes/no
        first, second = _two(world.people, rng, lambda a, b: (a.facts["nationality"] == b.facts["nationality"]) == same)
        return Question(f"Are {first.name} and {second.name} of the same nationality?", "yes" if same else "no", "comparison",
                        [first, second], [(first.name, first.sentences[0]), (second.name, second.sentences[0])])
    if pick == 2:
        first, second = _two(world.companies, rng, lambda a, b: a.facts["founded"] != b.facts["founded"])
        earlier = min((first, second), key=lambda company: company.facts["founded"])
        return Question(f"Which company was founded earlier, {first.name} or {second.name}?", earlier.name, "comparison",
                        [first, second], [(first.name, first.sentences[1]), (second.name, second.sentences[1])])
    first, second = _two(world.films, rng, lambda a, b: a.facts["released"] != b.facts["released"])
    earlier = min((first, second), key=lambda film: film.facts["released"])
    return Question(f"Which film was released first, {first.name} or {second.name}?", earlier.name, "comparison",
                    [first, second], [(first.name, first.sentences[0]), (second.name, second.sentences[0])])


def _similar_distractors(world: World, question: Question, rng: random.Random, count: int) -> list[Entity]:
    """Entities of the gold entities' kinds, those sharing a name part with a gold first."""
    gold = {id(entity) for entity in question.gold}
    kinds = {entity.kind for entity in question.gold}
    parts = {part for entity in question.gold for part in entity.name_parts}
    candidates = [entity for entity in world.entities if entity.kind in kinds and id(entity) not in gold]
    rng.shuffle(candidates)
    candidates.sort(key=lambda entity: not parts.intersection(entity.name_parts))  # stable: similar names first
    return candidates[:count]


def _estimate_tokens_per_doc(rng: random.Random, codec: TokenCodec) -> float:
    world = World(random.Random(rng.random()), 64)
    world.finish()
    texts = [DOCUMENT_TEMPLATE.format(index=index, text=entity.paragraph) for index, entity in enumerate(world.entities, 1)]
    return len(encode_long("\n\n".join(texts), codec)) / len(texts)


def multihop_sample(
    task: str,
    rng: random.Random,
    codec: TokenCodec,
    target_tokens: int | None,
    num_docs: int | None = None,
    kind: QuestionKind | None = None,
) -> Sample:
    """One synthetic multi-hop record (``qa`` or ``qa_hotpotqa_synthetic``); called by ``generate_task``."""
    if (num_docs is None) == (target_tokens is None):
        raise ValueError(f"{task}: give exactly one of target_tokens and num_docs, got {target_tokens!r} and {num_docs!r}")
    if num_docs is not None and not MIN_DOCS <= num_docs <= MAX_DOCS:
        raise ValueError(f"num_docs must be in {MIN_DOCS}..{MAX_DOCS} (MemAgent uses 50 ... 25600), got {num_docs!r}")
    if kind not in (None, "bridge", "comparison"):
        raise ValueError(f"kind must be 'bridge', 'comparison' or None (both), got {kind!r}")
    world_seed, question_seed, order_seed = rng.random(), rng.random(), rng.random()
    if num_docs is None:
        # Enough entities for the budget with a margin; a world that turns out too small is doubled below.
        world_size = int(1.3 * target_tokens / _estimate_tokens_per_doc(rng, codec)) + OWN_PARAGRAPHS
    else:
        world_size = num_docs + OWN_PARAGRAPHS
    while True:
        world = World(random.Random(world_seed), world_size)
        world.finish()
        question_rng = random.Random(question_seed)
        chosen_kind = kind or question_rng.choice(("bridge", "comparison"))
        question = (_bridge if chosen_kind == "bridge" else _comparison)(world, question_rng)
        own = _similar_distractors(world, question, question_rng, OWN_PARAGRAPHS - 2) if task == "qa_hotpotqa_synthetic" else []
        first = question.gold + own
        taken = {id(entity) for entity in first}
        others = [entity for entity in world.entities if id(entity) not in taken]
        random.Random(order_seed).shuffle(others)
        pool = first + others
        limit = len(pool)

        def build(count: int) -> str:
            chosen = pool[: max(count, 2)]  # the gold paragraphs come first in the pool
            # Shuffled per count with the seed: where the gold paragraphs land is random.
            random.Random(f"{order_seed}/{count}").shuffle(chosen)
            return render_documents([entity.paragraph for entity in chosen])

        template = prompt_template("qa", query=question.text)
        sample = fit_sample(
            task=task, template=template, question=question.text, answers=[question.answer], metric="any",
            build_context=build, codec=codec, target_tokens=target_tokens, units=num_docs, limit=limit, locate_answer=False,
            meta={
                "kind": question.kind,
                "gold_titles": [entity.name for entity in question.gold],
                "supporting_facts": [list(fact) for fact in question.supporting],
                "bridge_entity": question.bridge,
            },
        )
        count = sample.meta["haystack_units"]
        if count < 2:
            raise ValueError(f"{task}: target_tokens={target_tokens} cannot hold the two gold documents")
        if num_docs is not None or count < limit:
            sample.meta["num_docs"] = count
            return sample
        world_size *= 2
