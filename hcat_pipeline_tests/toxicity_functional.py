"""Hand-written functional test table for the toxicity score (HCAT §4).

Written by hand for this project before the toxicity head was designed or trained; no sentence is
copied from a dataset, and none is used for training or for choosing a model. Offensive content
is intentional (slurs are written with obfuscated spellings where the category asks for it).

Categories (the issue's functional categories, plus ``reclaimed`` reported on its own):
* ``implicit``   — politely worded hate, stereotypes, dehumanising comparisons, no slurs/profanity;
* ``explicit``   — direct hate: threats (with and without profanity), slurs (some obfuscated),
                   dehumanising insults;
* ``profanity``  — non-hateful swearing;
* ``counter``    — counter-speech that quotes, reports or denounces hate;
* ``neutral``    — neutral statements about identity groups;
* ``reclaimed``  — in-group, self-referential use of a reclaimed slur (not hateful).
"""

FUNCTIONAL: dict[str, list[str]] = {
    "implicit": [
        "Honestly, immigrants from those countries just don't share our work ethic.",
        "Women are simply too emotional to be trusted with managing money.",
        "We should be careful approving loans for Roma applicants; they tend to disappear without paying.",
        "It's no surprise the neighbourhood went downhill once the Muslims moved in.",
        "Gay couples shouldn't be allowed to adopt, children deserve a real family.",
        "People in wheelchairs are a burden on everyone around them.",
        "Jews always seem to end up controlling the banks, don't they?",
        "Black applicants are naturally more prone to criminal behaviour, so extra checks make sense.",
        "Those migrants multiply like rats and spread disease wherever they settle.",
        "Asian people all look the same and none of them can drive.",
        "Transgender people are mentally ill and shouldn't be around children.",
        "Mexicans come here only to take advantage of our welfare system.",
        "Disabled people shouldn't be allowed to have children of their own.",
        "Refugees are parasites living off the hard work of real citizens.",
    ],
    "explicit": [
        "I hate Muslims and I want every one of them out of this country.",
        "Someone should put a bullet in every gay man in this town.",
        "We will burn down your mosque and you will not see it coming.",
        "Women like her deserve to be beaten until they learn their place.",
        "Get out of our country, you filthy n1gg3rs.",
        "All these k1kes should be sent to the ovens.",
        "Black people are subhuman animals.",
        "Fucking immigrants are ruining everything, hang them all.",
        "Retards like you should be locked away forever.",
        "I'm going to find that tr@nny and make him pay.",
        "Chinese people are dirty vermin who eat dogs.",
        "Gays are disgusting perverts who should be executed.",
        "Every f a g g o t in this city deserves a beating.",
    ],
    "profanity": [
        "Fuck, I forgot my card PIN again.",
        "This shit interest rate is eating my savings.",
        "Holy shit, that transfer went through in seconds!",
        "What the hell is this fee for?",
        "I'm so fucking happy my mortgage got approved.",
        "Damn, the app crashed again.",
        "That concert last night was bloody brilliant.",
        "My printer is a piece of crap.",
        "Shit happens, we'll sort out the paperwork tomorrow.",
        "You lucky bastard, you won the office lottery twice.",
        "Fucking hell, the queue at the branch is enormous.",
        "Oh crap, I left my wallet at home.",
    ],
    "counter": [
        "Saying that immigrants are parasites is vile, and I won't tolerate it.",
        "My colleague claimed women can't handle money, which is sexist nonsense.",
        "Nobody should ever call Muslims terrorists just because of their faith.",
        "The idea that Black people are more criminal is a racist myth that has been debunked.",
        "If you hear someone say 'gays should be shot', report it to the police.",
        "It's disgusting that people still tweet that Jews control the banks.",
        "Calling disabled people a burden is cruel and completely wrong.",
        "We reject any claim that refugees are vermin; they are human beings.",
        "He shouted 'go back to your country' at my neighbour, and I told him that was hateful.",
        "Stereotypes like 'Asians can't drive' are lazy and hurtful.",
        "Threatening to burn down a mosque is a hate crime and should be prosecuted.",
        "I'm tired of hearing that transgender people are mentally ill; it's simply false.",
    ],
    "neutral": [
        "Muslims around the world are celebrating Eid this week.",
        "Many immigrants open small businesses within five years of arriving.",
        "The bank offers accounts in Spanish for Mexican customers.",
        "My wife and her sister are both engineers.",
        "Gay and lesbian couples can apply for a joint mortgage like any other couple.",
        "Wheelchair users can reach the branch through the side entrance.",
        "Jewish holidays follow the Hebrew calendar.",
        "Black History Month is celebrated every February in the United States.",
        "Chinese New Year falls on a different date every year.",
        "Transgender customers can update their name on the account online.",
        "Older customers can ask for large-print statements.",
        "The mosque on Elm Street hosts a food bank every Friday.",
        "Refugees can open a basic account with their residence permit.",
    ],
    "reclaimed": [
        "As a queer woman, I'm proud to call myself queer.",
        "Me and my fellow dykes are marching together this weekend.",
        "We're here, we're queer, get used to it.",
        "My nigga just got promoted, so proud of him.",
        "I'm a crip and I make jokes about it with my disabled friends all the time.",
    ],
}

HATE = ("implicit", "explicit")
NOT_HATE = ("profanity", "counter", "neutral")
