"""Cross-thread personalisation (issue #18 item 6, second half): does what a user said in one thread reach the
context of their next thread, and does a changed value replace the old one there?

A scripted set, offline deriver (no LLM), one tenant: each of ``--users`` users states seven plain facts about
themselves in a first thread (among small talk), a third of them change two of those facts later in a second
thread (knowledge updates: another city, job, favourite colour or car), and then every user opens a new
thread with one question. For each user the engine's ``rpc.context`` answer for that new thread is read at 2k, 4k
and 8k windows and searched for the stated values:

- ``relevant_present``: fraction of the user's current facts (after updates) whose value is in the context;
- ``asked_present``: fraction of users whose asked-about fact is in the context;
- ``stale_present``: fraction of updated facts whose old value is still in the context (target <= 0.05);
- ``leaked``: fraction of contexts holding a value only another user stated (must be 0);
- ``extracted``: fraction of stated facts (current values) that are an active memory item at all.

Values are unique per user (and old/new values are distinct words), so a substring test is exact.

``context_latency_8k``: ``rpc.context`` for the users' new threads at 8k, alternately with and without the
user-memory part (``--requests`` each way), end to end over NATS.

    python bench/personalisation.py [--users 20] [--requests 1000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time

from _common import bench_settings, machine, summary

from memengine.engine.adapters.logs import configure_logging
from memengine.engine.bootstrap import Engine, lifespan

CITIES = ["Lisbon", "Oslo", "Denver", "Kyoto", "Nairobi", "Quito", "Tallinn", "Perth", "Lyon", "Porto", "Austin",
          "Bergen", "Cusco", "Hanoi", "Malmo", "Split", "Tucson", "Zagreb", "Leeds", "Graz", "Turin", "Ghent",
          "Bilbao", "Dakar", "Aarhus", "Krakow", "Boise", "Cork", "Halifax", "Utrecht", "Bremen", "Seville",
          "Lucerne", "Tromso", "Salta", "Fresno", "Gdansk", "Arequipa", "Windhoek", "Ljubljana"]
JOBS = ["nurse", "carpenter", "pilot", "librarian", "chemist", "plumber", "baker", "architect", "dentist",
        "journalist", "surveyor", "electrician", "midwife", "geologist", "translator", "welder", "pharmacist",
        "paramedic", "florist", "tailor", "locksmith", "veterinarian", "cartographer", "glazier", "sommelier",
        "actuary", "optician", "beekeeper", "stonemason", "archivist", "hydrologist", "upholsterer", "auctioneer",
        "bookbinder", "farrier", "luthier", "taxidermist", "cooper", "chandler", "falconer"]
COLOURS = ["teal", "crimson", "ochre", "lilac", "amber", "indigo", "maroon", "olive", "coral", "magenta",
           "turquoise", "saffron", "mauve", "cobalt", "scarlet", "beige", "lavender", "emerald", "vermilion",
           "charcoal", "cyan", "khaki", "burgundy", "periwinkle", "sienna", "chartreuse", "fuchsia", "taupe",
           "azure", "mint", "ivory", "plum", "rust", "sapphire", "bronze", "cerulean", "jade", "mustard",
           "salmon", "umber"]
FOODS = ["cilantro", "olives", "anchovies", "mushrooms", "eggplant", "okra", "liquorice", "blue cheese", "tofu",
         "beetroot", "sardines", "celery", "kale", "mayonnaise", "radishes", "capers", "tripe", "raisins",
         "pickles", "turnips", "oysters", "fennel", "artichokes", "quinoa", "parsnips", "clams", "rhubarb",
         "coconut", "sauerkraut", "kimchi", "lentils", "asparagus", "papaya", "gherkins", "squid", "durian",
         "marzipan", "chickpeas", "horseradish", "wasabi"]
PETS = ["Biscuit", "Pepper", "Ziggy", "Mochi", "Waffles", "Nutmeg", "Pickle", "Toffee", "Juniper", "Bramble",
        "Clover", "Pretzel", "Maple", "Sprocket", "Tinsel", "Noodle", "Gizmo", "Basil", "Paprika", "Domino",
        "Marbles", "Kiwi", "Rascal", "Sherlock", "Figaro", "Pistachio", "Cosmo", "Hazel", "Tango", "Zephyr",
        "Crumpet", "Dumpling", "Muffin", "Obsidian", "Quill", "Rolo", "Sorbet", "Truffle", "Velvet", "Wombat"]
CARS = ["Corolla", "Civic", "Outback", "Miata", "Prius", "Passat", "Tacoma", "Wrangler", "Impreza", "Jetta", "Camry",
        "Accord", "Fiesta", "Mustang", "Octavia", "Clio", "Yaris", "Qashqai", "Tiguan", "Forester", "Kona", "Niro",
        "Ioniq", "Panda", "Punto", "Megane", "Astra", "Corsa", "Mondeo", "Highlander", "Pathfinder", "Sentra",
        "Altima", "Elantra", "Sonata", "Cayenne", "Defender", "Superb", "Fabia", "Ibiza"]
PARTNERS = ["Rowan", "Ines", "Tobias", "Margit", "Esteban", "Yusuf", "Anneke", "Bartek", "Celeste", "Dorian",
            "Eamon", "Freya", "Gideon", "Halima", "Ingrid", "Jasper", "Kalani", "Leopold", "Mireille", "Nikolai",
            "Oona", "Pascual", "Quentin", "Rosalind", "Soren", "Tamsin", "Ulrich", "Vesna", "Wendell", "Ximena",
            "Yorick", "Zuzana", "Ambrose", "Bettina", "Cosimo", "Delphine", "Evander", "Fiorella", "Gunnar",
            "Henrike"]
SMALL_TALK = ["Good morning! Busy day today.", "Thanks, that was helpful.", "Can you tell me a fun fact about owls?",
              "What's a good name for a book club?", "Ok, let's move on."]

#: How the later changes are said (the shapes of issue #18 item 5: "I moved to", "I switched to", "... now").
CHANGES = {"city": "I moved to {} last month.", "job": "I switched jobs: I work as a {} now.",
           "colour": "My favorite color is {} now.", "car": "I sold my old car, I drive a {} now."}


def has(value: str, text: str) -> bool:
    """``value`` as whole words in ``text`` (lower case): "plum" is not in "plumber"."""
    return re.search(r"\b" + re.escape(value.lower()) + r"\b", text) is not None


def script(i: int, n: int) -> dict[str, object]:
    """User ``i`` of ``n``: the first thread's facts, the later changes (every third user), the question."""
    facts = {"city": ("I live in {}.", CITIES[i]), "job": ("I work as a {}.", JOBS[i]),
             "colour": ("My favorite color is {}.", COLOURS[i]), "food": ("I don't like {}.", FOODS[i]),
             "pet": ("I have a dog named {}.", PETS[i]),
             # shapes the offline extractor of this version may miss (issue #18 item 5): the past-turn fallback
             "car": ("I drive a {} these days.", CARS[i]), "partner": ("My partner is called {}.", PARTNERS[i])}
    changes = {}
    if i % 3 == 0:  # knowledge updates: values from the second half of the lists, used by nobody else
        changes = {"city": CITIES[n + i], "job": JOBS[n + i]} if i % 2 == 0 else \
            {"colour": COLOURS[n + i], "car": CARS[n + i]}
    asked = ["city", "job", "colour", "food", "pet", "car", "partner"][i % 7]
    question = {"city": "Which neighbourhood of my city is good for a walk this weekend?",
                "job": "Any tips to be less tired after a long shift at my job?",
                "colour": "What colour should I paint my study, given my favorite color?",
                "food": "Suggest a dinner recipe; remember the foods I don't like.",
                "pet": "How often should I take my dog to the vet?",
                "car": "When should my car get its next service?",
                "partner": "What gift could I buy my partner for our anniversary?"}[asked]
    return {"facts": facts, "changes": changes, "asked": asked, "question": question}


async def drained(engine: Engine, timeout: float = 300.0) -> None:
    """Until every consumer of the facts and derived streams has reached their current end."""
    deadline = time.monotonic() + timeout
    while True:
        facts = (await engine.js.stream_info(engine.streams.facts)).state.last_seq
        derived = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
        rows = await engine.pool.fetch("SELECT stream, last_seq FROM projection_checkpoints")
        if all(r["last_seq"] >= (facts if r["stream"] == engine.streams.facts else derived)
               for r in rows if r["stream"] in (engine.streams.facts, engine.streams.derived)):
            again = (await engine.js.stream_info(engine.streams.derived)).state.last_seq
            if again == derived:
                return
        if time.monotonic() > deadline:
            raise TimeoutError("the engine did not catch up")
        await asyncio.sleep(0.1)


async def main(users: int, requests: int = 1000, debug: bool = False) -> dict[str, object]:
    configure_logging("warning")
    settings = bench_settings()
    n = users
    assert 2 * n <= len(CITIES), f"at most {len(CITIES) // 2} users"
    plans = [script(i, n) for i in range(n)]
    async with lifespan(settings) as engine:
        c = engine.client("p13n")
        t0 = time.perf_counter()
        for i, p in enumerate(plans):
            u = f"user{i:02d}"
            facts = p["facts"]
            assert isinstance(facts, dict)
            for k, (tpl, value) in facts.items():
                await c.record_turn(f"{u}-first", "user", tpl.format(value), user_id=u)
                await c.record_turn(f"{u}-first", "assistant", "Noted, thank you.", user_id=u)
                if k in ("job", "food"):
                    await c.record_turn(f"{u}-first", "user", SMALL_TALK[i % len(SMALL_TALK)], user_id=u)
        await drained(engine)  # the changes come later than the first statements, as in life
        for i, p in enumerate(plans):
            u = f"user{i:02d}"
            changes, facts = p["changes"], p["facts"]
            assert isinstance(changes, dict) and isinstance(facts, dict)
            for k, value in changes.items():
                await c.record_turn(f"{u}-later", "user", SMALL_TALK[(i + 1) % len(SMALL_TALK)], user_id=u)
                await c.record_turn(f"{u}-later", "user", CHANGES[k].format(value), user_id=u)
        asks = {}
        for i, p in enumerate(plans):
            u = f"user{i:02d}"
            asks[u] = await c.record_turn(f"{u}-new", "user", str(p["question"]), user_id=u)
        await drained(engine)
        load_s = time.perf_counter() - t0

        items = await engine.pool.fetch("SELECT user_id, text FROM memory_items WHERE tenant_id = 'p13n'"
                                        " AND status = 'active'")
        by_user: dict[str, list[str]] = {}
        for r in items:
            by_user.setdefault(r["user_id"], []).append(r["text"])
        current = {}
        for i, p in enumerate(plans):
            facts, changes = p["facts"], p["changes"]
            assert isinstance(facts, dict) and isinstance(changes, dict)
            current[f"user{i:02d}"] = {k: changes.get(k, v) for k, (_t, v) in facts.items()}
        # every value a user ever stated (old and new): another user's context must hold none of them
        all_values = {f"user{i:02d}": {v for _t, v in p["facts"].values()} | set(p["changes"].values())  # type: ignore[union-attr]
                      for i, p in enumerate(plans)}
        extracted = sum(1 for u, vals in current.items() for v in vals.values()
                        if any(has(v, t.lower()) for t in by_user.get(u, [])))
        n_facts = sum(len(v) for v in current.values())

        out: dict[str, object] = {}
        for window in (2_000, 4_000, 8_000):
            present = asked_ok = stale = n_stale = leaked = 0
            part_tokens = []
            for i, p in enumerate(plans):
                u = f"user{i:02d}"
                ctx = await c.context(f"{u}-new", window=window, after_seq=asks[u].seq)
                text = " ".join(b.get("text", "") for m in ctx.messages for b in m.content
                                if isinstance(b, dict)).lower()
                if ctx.user_memory is not None:
                    part_tokens.append(ctx.user_memory.tokens)
                cur = current[u]
                present += sum(1 for v in cur.values() if has(v, text))
                asked_ok += has(cur[str(p["asked"])], text)
                if debug:
                    missing = [v for v in cur.values() if not has(v, text)]
                    if missing:
                        print(window, u, "missing", missing, "\n", text[:3000], file=sys.stderr)
                facts, changes = p["facts"], p["changes"]
                assert isinstance(facts, dict) and isinstance(changes, dict)
                for k in changes:
                    n_stale += 1
                    stale += has(facts[k][1], text)
                others = set().union(*(vals for o, vals in all_values.items() if o != u))
                leaks = [v for v in others - all_values[u] if has(v, text)]
                leaked += bool(leaks)
                if debug and leaks:
                    print(window, u, "leaked", leaks, file=sys.stderr)
            out[str(window)] = {
                "relevant_present": round(present / n_facts, 3), "asked_present": round(asked_ok / n, 3),
                "stale_present": round(stale / max(1, n_stale), 3), "leaked": round(leaked / n, 3),
                "user_memory_tokens_mean": round(sum(part_tokens) / max(1, len(part_tokens)), 1),
                "tier1_budget": ctx.budget.tier1}
        # latency of the part (issue #18 target: p50 within 3 ms of the context without it), alternating on / off
        lat: dict[bool, list[float]] = {True: [], False: []}
        for j in range(2 * requests + 100):
            on = j % 2 == 0
            engine.service.user_memory = on
            u = f"user{(j // 2) % n:02d}"
            t = time.perf_counter()
            await c.context(f"{u}-new", window=8_000)
            if j >= 100:
                lat[on].append((time.perf_counter() - t) * 1000)
        engine.service.user_memory = True
        timing = {"with_ms": summary(lat[True]), "without_ms": summary(lat[False])}
        timing["p50_delta_ms"] = round(timing["with_ms"]["p50"] - timing["without_ms"]["p50"], 3)
        return {"bench": "personalisation", "users": n, "facts": n_facts, "context_latency_8k": timing,
                "updated_facts": sum(len(p["changes"]) for p in plans),  # type: ignore[arg-type]
                "extracted": round(extracted / n_facts, 3), "load_seconds": round(load_s, 1), "windows": out,
                "machine": machine()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--requests", type=int, default=1000, help="context requests timed each way (part on / off)")
    ap.add_argument("--debug", action="store_true", help="print each context missing a value (stderr)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = asyncio.run(main(args.users, args.requests, args.debug))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
