"""In-group, self-referential use of reclaimed slurs: clean negatives for the toxicity head.

The issue's functional categories say a reclaimed slur used by its own community ("we're queer and
proud") is not hate. The public sets hold almost none, and the fine-tuned encoder reads the slur
alone. These seeded template fills (the ``toxicity_operational`` machinery, split by template id,
a quarter held out for the benchmark) put each reclaimable slur of the lexicon in a first-person or
in-group frame, with a speaker of that community. Written for this purpose; no sentence of the
hand-written functional table is among them (test).
"""

from __future__ import annotations

from hcat_pipeline.metrics.toxicity.operational import fill_templates, heldout_templates

# (slur as used in the group, a speaker of that group)
QUEER = (("queer", "a queer woman"), ("queer", "a nonbinary person"), ("queer", "a bisexual man"), ("dyke", "a lesbian"),
         ("dyke", "a butch lesbian"), ("crip", "a wheelchair user"), ("crip", "a disabled artist"), ("slut", "a sex-positive woman"))  # fmt: skip
PLURAL = (("queers", "the queer youth group"), ("dykes", "the lesbian choir"), ("crips", "the disabled activists"),
          ("niggas", "the guys from the block"), ("sluts", "the SlutWalk organisers"))  # fmt: skip
DOING = ("organising the pride picnic", "running the book club", "painting the community centre", "planning our film night",
         "cooking for the fundraiser", "marching downtown on Sunday")  # fmt: skip

RECLAIMED_TEMPLATES: tuple[tuple[str, str, tuple], ...] = (
    ("self_word", "Speaking as {0[1]}, {0[0]} is a word I use for myself {1}.", (QUEER, ("with pride", "every day", "on purpose", "and I love it"))),
    ("self_identity", "I'm {0[1]}; {0[0]} is just what my friends and I say, {1}.", (QUEER, ("no offence meant", "it's ours", "always has been"))),
    ("self_community", "Being {0[1]}, I say {0[0]} about my own community {1}.", (QUEER, ("and nobody there minds", "as a badge of honour"))),
    ("group_doing", "Me and {0[1]} are proud {0[0]} {1} this weekend.", (PLURAL, DOING)),
    ("group_name", "We are {0[1]} and we call ourselves {0[0]}, {1} together.", (PLURAL, DOING)),
    ("group_hello", "Hey my fellow {0[0]}, who is coming {1}?", (PLURAL[:3] + PLURAL[4:], ("to the meetup", "to the picnic", "to help tonight"))),
    ("shout_out", "Shout out to my {0} {1}, love you all.", (("niggas", "crips", "dykes", "queers"), ("for the surprise party", "who showed up today", "from the old neighbourhood"))),
    ("reclaim_history", "{0} reclaimed the word {1} as their own decades ago.", (("Activists in the community", "Our elders", "The movement"),
                                                                                 ("queer", "dyke", "crip"))),
)  # fmt: skip


def reclaimed_heldout(seed: int = 0) -> set[str]:
    return heldout_templates(seed, templates=RECLAIMED_TEMPLATES)


def reclaimed_templates(seed: int = 0, split: str = "train", with_ids: bool = False, per_template: int = 60) -> list:
    return fill_templates(RECLAIMED_TEMPLATES, per_template, seed, split, with_ids)
