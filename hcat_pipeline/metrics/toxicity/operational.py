"""Clean operational prose with violent words: negatives for the toxicity head and its encoder.

Technical, financial, game, sports and kitchen language is full of violent verbs ("kill the
worker", "the market crashed", "shoot the asteroid", "beat the eggs") that never target a person or
a group. A head trained on tweets reads the verb and flags the sentence; these sentences teach it
that the verb alone is not hate. Two sources, both deterministic and free of the public sets:

* ``operational_templates``: seeded fills of hand-written templates. Every template has an id and
  the split is by template (``heldout_templates``): no held-out sentence pattern is trained on, so
  their false-positive rate measures generalisation, not recall. Slot fillers are shared across
  templates of a domain (the held-out ``ops_execute`` uses the ops subjects and targets of
  ``ops_modal``), so the benchmark reports the rate per template too.
* ``docstring_sentences``: the sentences of installed stdlib docstrings (process / thread / signal
  handling) that contain a violent word ("Kill a process group with a signal.").
"""

from __future__ import annotations

import hashlib
import random
import re
from itertools import product

SUBJ = ("We", "You", "I", "The on-call engineer", "The operator", "Our ops team", "The admin", "She", "He", "They")
MODAL = ("should", "will", "can", "had to", "tried to", "forgot to", "must", "could", "would rather", "were told to")
KILL = ("kill", "terminate", "abort", "nuke", "force-kill", "take down", "destroy", "blow away", "wipe out", "shoot down")
TARGET = ("the process", "the worker", "the stuck job", "the container", "the pod", "the daemon", "the child process",
          "the zombie processes", "the old branch", "the cache", "the session", "the hung thread", "the batch run",
          "the query", "the build", "the staging server", "the deployment", "the test database", "the orphaned tasks",
          "the runaway script", "the connection pool", "the cron job", "the VM", "the feature flag")  # fmt: skip
AFTER = ("and restart it", "before the deploy", "after the timeout", "so the queue drains", "and try again",
         "to free the memory", "when it stops responding", "and check the logs", "before midnight", "and start a fresh one")  # fmt: skip
WHEN = ("during the nightly run", "at three in the morning", "after the upgrade", "under heavy load", "twice this week", "right after startup",
        "in the middle of the migration", "when the disk filled up", "on every retry", "without any warning")  # fmt: skip
FALLOUT = ("the retries failed too", "the dashboard went red", "we lost an hour of logs", "the pager went off",
           "the backlog kept growing", "nobody noticed until morning")  # fmt: skip
ENEMY = ("goblin", "dragon", "zombie", "final boss", "alien ship", "asteroid", "tank", "robot", "skeleton", "sniper")
WEAPON = ("the laser", "a fireball", "the sword", "the cannon", "a rocket", "the bow", "the shotgun", "a grenade")
HURT = ("shoots", "attacks", "kills", "destroys", "stabs", "hits", "blows up", "slays")
ORDER = ("the sell order", "the block trade", "the hedge", "the limit order", "the swap", "the buyback")
MARKET = ("The bond market", "Bank stocks", "The index", "The currency", "Crypto prices", "Tech shares")
EVENT = ("the rate decision", "the earnings miss", "the downgrade", "the default", "the jobs report", "the bank run rumour")
DISH = ("the eggs", "the garlic", "the dough", "the potatoes", "the chicken breasts", "the cream")

# (template id, template, slot tuples): one row per sentence pattern
TEMPLATES: tuple[tuple[str, str, tuple], ...] = (
    ("ops_modal", "{0} {1} {2} {3} {4}.", (SUBJ, MODAL, KILL, TARGET, AFTER)),
    ("ops_if_hangs", "If {0} hangs, {1} it {2}.", (TARGET, KILL, AFTER)),
    ("ops_died", "{0} died {1} and {2}.", (TARGET, WHEN, FALLOUT)),
    ("ops_oom", "{0} was killed by the OOM killer {1}.", (TARGET, WHEN)),
    ("ops_crash", "{0} crashed {1}, so {2}.", (TARGET, WHEN, FALLOUT)),
    ("ops_execute", "{0} {1} execute {2} {3}.", (SUBJ, MODAL, TARGET, WHEN)),
    ("ops_dead", "{0} is dead, so {1} {2} it {3}.", (TARGET, ("we", "you", "they", "I"), KILL, AFTER)),
    ("game_hurt", "The player {0} the {1} with {2}.", (HURT, ENEMY, WEAPON)),
    ("game_dies", "When its health reaches zero, the {0} dies and drops {1}.", (ENEMY, ("a coin", "a key", "its loot", "a health pack"))),
    ("game_respawn", "If you get hit by the {0}, you die and respawn {1}.", (ENEMY, ("at the last checkpoint", "at the start", "after ten seconds"))),
    ("fin_execute", "The desk executed {0} {1}.", (ORDER, WHEN)),
    ("fin_crash", "{0} crashed after {1} and wiped out the quarter's gains.", (MARKET, EVENT)),
    ("fin_hit", "{0} took a big hit after {1}.", (MARKET, EVENT)),
    ("fin_kill", "The committee killed {0} after {1}.", (("the merger", "the loan deal", "the product launch", "the pilot"), EVENT)),
    ("sport_shot", "The striker shot the ball {0}.", (("into the top corner", "past the keeper", "over the bar", "wide of the post"),)),
    ("sport_beat", "{0} beat their rivals {1} {2}.", (("The home side", "Our team", "The champions"), ("three nil", "by two points", "in extra time"),
                                                 ("on Saturday", "in the cup final", "despite the rain", "for the first time in years"))),
    ("kitchen", "{0} {1} until smooth.", (("Beat", "Smash", "Crush", "Pound", "Whip"), DISH)),
    ("kitchen_kill", "Kill the heat, then {0} {1}.", (("chop", "mash", "crush"), DISH)),
)  # fmt: skip

HELDOUT_FRACTION = 0.25


def heldout_templates(seed: int = 0, fraction: float = HELDOUT_FRACTION, templates: tuple = TEMPLATES) -> set[str]:
    """Template ids kept out of training: the lowest ``fraction`` by a seeded hash of the id."""
    ranked = sorted(templates, key=lambda t: hashlib.sha256(f"{seed}:{t[0]}".encode()).hexdigest())
    return {t[0] for t in ranked[: max(1, round(fraction * len(templates)))]}


def operational_templates(per_template: int = 80, seed: int = 0, split: str = "train", with_ids: bool = False) -> list:
    """Up to ``per_template`` seeded fills of every operational template in ``split``."""
    return fill_templates(TEMPLATES, per_template, seed, split, with_ids)


def fill_templates(templates: tuple, per_template: int, seed: int, split: str = "train", with_ids: bool = False) -> list:
    """Up to ``per_template`` seeded fills of every template of a (id, pattern, slots) table in
    ``split`` ("train" | "heldout"); ``with_ids``: (template id, sentence) pairs."""
    held = heldout_templates(seed, templates=templates)
    rng = random.Random(seed)
    out: list = []
    for tid, pattern, slots in templates:
        if (tid in held) != (split == "heldout"):
            continue
        fills = sorted(product(*slots))
        for fill in rng.sample(fills, min(per_template, len(fills))):
            s = pattern.format(*fill)
            s = s[0].upper() + s[1:]
            out.append((tid, s) if with_ids else s)
    return out


VIOLENT = re.compile(r"\b(kill\w*|terminat\w*|abort\w*|die[sd]?|dead\w*|zombie\w*|orphan\w*|execut\w*|crash\w*|hang\w*|starv\w*)\b", re.I)
DOC_MODULES = ("os", "signal", "subprocess", "multiprocessing", "asyncio", "threading", "concurrent.futures", "faulthandler", "sched")


def docstring_sentences(modules: tuple[str, ...] = DOC_MODULES) -> list[str]:
    """Sorted sentences of the modules' (and their classes') docstrings that contain a violent
    word; deterministic for a pinned Python version."""
    import importlib
    import inspect

    from hcat_pipeline.corpus.chunking import split_sentences

    found: set[str] = set()
    for name in modules:
        mod = importlib.import_module(name)
        objs = [mod] + [getattr(mod, a, None) for a in sorted(dir(mod)) if not a.startswith("_")]
        objs += [getattr(o, a, None) for o in list(objs) if inspect.isclass(o) for a in sorted(vars(o)) if not a.startswith("_")]
        for obj in objs:
            doc = inspect.getdoc(obj) if obj is not None else None
            for sent in split_sentences(" ".join((doc or "").split())):
                words = sent.split()
                if 5 <= len(words) <= 40 and VIOLENT.search(sent) and sum(c.isalpha() or c == " " for c in sent) >= 0.8 * len(sent):
                    found.add(sent.strip())
    return sorted(found)


def operational_negatives(seed: int = 0, per_template: int = 80) -> list[str]:
    """The training negatives: the training templates' fills and the docstring sentences."""
    return operational_templates(per_template, seed, "train") + docstring_sentences()
