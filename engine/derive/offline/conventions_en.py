"""What a standing rule sets about the assistant's replies, and when a newer rule changes it (issue #29 item 1:
changed standing rules; seed 002 §2.2 "冲突的记忆 → 保留最新").

A user who asked for Spanish answers and later says "you can switch back to English now", or asked for a casual
tone and later for a formal one, has one convention per aspect of the replies: the newer rule replaces the older.
Two rules about different aspects ("reply in German", "keep answers short") both stand. The aspect is read from
what the rule names, by class, never by the rule's wording:

* ``language``: a language or a variety of one ("in Spanish", "British spelling"): the parser's LANGUAGE / NORP
  entities (not the MiniLM kind: "use Python" is no reply language);
* ``name``: what to call the user ("call me Dee", "use Julia from now on": a name after a verb of calling, or
  after "use" when the parser or the MiniLM's nearest kind, ``kinds.nearest``, takes it for a person's) — a naming
  rule also ends an older PROFILE / PREFERENCE item that names the user otherwise;
* ``register``, ``length``, ``format``, ``units``, ``currency``: the closed classes of words ``ASPECTS`` lists
  (every tone, every length, every unit system and currency people ask for, not the words of a case).

A newer rule that adds ("also", "too", "as well") or names the same values changes nothing; nor does one that asks
for a value beside an older one that forbids another ("stop using bullet points" / "write in normal paragraphs"),
while one that forbids a value once asked for, or asks for one once forbidden, does. Pure for a given parser
and weights; English only.
"""

from __future__ import annotations

import re

from memengine.engine.derive.offline import kinds, parse_en

#: aspect -> the words that name one of its values (lower case); a word may name values of two aspects (pounds)
ASPECTS: dict[str, frozenset[str]] = {
    "register": frozenset("""formal informal casual professional polite friendly blunt direct gentle harsh strict
        serious playful relaxed chill laid-back warm cheeky sarcastic corporate stiff businesslike conversational
        chatty jokey funny neutral diplomatic straightforward""".split()),
    "length": frozenset("""short shorter brief briefer concise long longer detailed thorough verbose terse elaborate
        succinct lengthy in-depth minimal""".split()),
    "format": frozenset("""bullet bullets bullet-point bullet-points paragraph paragraphs prose list lists table
        tables numbered markdown essay essays plain""".split()),
    "units": frozenset("""metric imperial celsius fahrenheit kilometres kilometers km miles mph kg kilos kilograms
        pounds lbs stone feet foot inches metres meters centimetres centimeters cups grams ounces""".split()),
    "currency": frozenset("""dollars dollar usd euros euro eur pounds sterling gbp quid yen jpy yuan rmb renminbi cny
        rupees rupee inr pesos peso francs franc chf krona kronor krone sek nok dkk won krw rand zar reais real brl
        zloty pln baht lira""".split()),
}
#: the verbs a naming rule uses ("call me Dee", "address me as Dr Okafor", "use Julia", "refer to me as Sam")
_NAMING = re.compile(r"\b(?:call(?:ing)?|address(?:ing)?|refer(?:ring)? to|use|name)\s+(?:me|them|him|her)?\s*"
                     r"(?:as\s+)?['\"‘“]?(?P<n>(?-i:[A-Z][\w'-]+))", re.I)
#: how a PROFILE / PREFERENCE item names the user ("User's name is Jules", "wants to be called Jules")
_NAMED = re.compile(r"\b(?:name is|called|addressed as|known as|goes by)\s+['\"‘“]?(?P<n>(?-i:[A-Z][\w'-]+))", re.I)
_ADDITIVE = re.compile(r"\b(?:also|too|as well|in addition|additionally)\b", re.I)
_RULE_PREFIX = re.compile(r"^.{0,60}?'s rule:\s*", re.I)


def _body(text: str) -> str:
    return _RULE_PREFIX.sub("", text.strip())


def _name(body: str) -> str | None:
    """The name a naming rule gives the user: after call / address (any capitalised word), or after use / name
    only when it is a person's name (the parser's PERSON, or ``kinds`` ``person``): "use Python" names no one."""
    for m in _NAMING.finditer(body):
        word = m.group("n")
        if word in ("I", "From", "Now"):
            continue
        if m.group(0).lower().startswith(("use", "name")):
            doc = parse_en.parsed(body)
            person = doc is not None and any(t.text == word and t.ent_type_ == "PERSON" for t in doc)
            if not (person or kinds.nearest(word) == "person"):
                continue
        return word.lower()
    return None


def aspects(rule: str) -> dict[str, frozenset[str]]:
    """``{aspect: the values the rule names}`` of a rule's text ("User's rule: answer in Spanish from now on" ->
    ``{"language": {"spanish"}}``); empty when it names none (see the module docstring for the aspects)."""
    body = _body(rule)
    words = [w.lower() for w in re.findall(r"[A-Za-z][\w-]*", body)]
    out: dict[str, set[str]] = {}
    for aspect, vocab in ASPECTS.items():
        hit = {w for w in words if w in vocab}
        if hit:
            out[aspect] = hit
    doc = parse_en.parsed(body)
    for tok in doc if doc is not None else ():
        taken = any(tok.text.lower() in vocab for vocab in ASPECTS.values())  # "Celsius" is a unit, no language
        # the parser's entity, not the kind alone: "use Python" names a programming language, no reply language
        if not taken and tok.text[:1].isupper() and tok.is_alpha and tok.ent_type_ in ("LANGUAGE", "NORP"):
            out.setdefault("language", set()).add(tok.text.lower())
    if (name := _name(body)) is not None:
        out["name"] = {name}
    return {k: frozenset(v) for k, v in out.items()}


def changes(new_rule: str, old_text: str, old_type: str) -> str | None:
    """Why the newer rule ``new_rule`` (a RULE item's text) replaces an older item, or ``None``: an older RULE that
    sets an aspect the newer one sets with other values, or an older PROFILE / PREFERENCE item naming the user
    otherwise than a newer naming rule. An additive newer rule replaces nothing."""
    if _ADDITIVE.search(_body(new_rule)):
        return None
    new = aspects(new_rule)
    if not new:
        return None
    if old_type.upper() in ("PROFILE", "PREFERENCE"):
        m = _NAMED.search(old_text)
        if "name" in new and m is not None and m.group("n").lower() not in new["name"]:
            return f"name: {m.group('n')} -> {next(iter(new['name']))}"
        return None
    if old_type.upper() != "RULE":
        return None
    old = aspects(old_text)
    refused, was_refused = _refuses(new_rule), _refuses(old_text)
    for aspect in sorted(new.keys() & old.keys()):
        if refused == was_refused and not refused and not new[aspect] <= old[aspect] or \
                refused != was_refused and new[aspect] & old[aspect]:
            # two asked-for values differ, or a value once asked for is now refused (or the reverse); a refused
            # value and another asked for agree ("no bullet points" / "write paragraphs"), as two refusals do
            return f"{aspect}: {', '.join(sorted(old[aspect]))} -> {', '.join(sorted(new[aspect]))}"
    return None


#: a rule that forbids what it names ("never use bullet points", "stop using tables", "no emojis"); "don't be X"
_REFUSAL = re.compile(r"^(?:(?:please|just|and|so)\s+)*(?:don'?t|do not|never|stop|quit|cease|avoid|no|no more|"
                      r"without)\b", re.I)


def _refuses(rule: str) -> bool:
    """Whether a rule's text forbids the values it names, not asks for them."""
    return _REFUSAL.match(_body(rule)) is not None
