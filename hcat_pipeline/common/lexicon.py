"""The project's antonym list: word pairs of direction, quantity, outcome, time and evaluation (both directions are
used). The NLI features read it for contradiction cues, the golden-set claims for rule-built 'no' questions."""

from __future__ import annotations

# antonym pairs (both directions are used): direction, quantity, outcome, time and evaluation words
_ANTONYM_PAIRS = """increase decrease|increased decreased|increases decreases|rise fall|rose fell|risen fallen|
higher lower|more less|most least|larger smaller|bigger smaller|largest smallest|biggest smallest|
above below|up down|gain loss|gained lost|win lose|won lost|wins loses|winner loser|success failure|
succeeded failed|accept reject|accepted rejected|approve reject|approved rejected|allow forbid|allowed banned|
support oppose|supported opposed|supports opposes|agree disagree|agreed disagreed|before after|first last|
early late|earlier later|start end|started ended|begin finish|open close|opened closed|increase reduce|
positive negative|good bad|better worse|best worst|strong weak|stronger weaker|high low|long short|
longer shorter|old new|older newer|old young|older younger|true false|correct incorrect|legal illegal|
possible impossible|likely unlikely|able unable|male female|men women|man woman|boy girl|husband wife|
father mother|son daughter|brother sister|buy sell|bought sold|import export|imports exports|north south|
east west|left right|inside outside|internal external|always never|all none|everyone nobody|many few|
majority minority|maximum minimum|profit loss|profits losses|cheap expensive|rich poor|full empty|
hot cold|warm cool|fast slow|faster slower|easy difficult|easier harder|safe dangerous|alive dead|
present absent|include exclude|included excluded|add remove|added removed|hire fire|hired fired|
arrive depart|arrived left|enter exit|public private|domestic foreign|light heavy|wet dry|same different|
confirmed denied|confirm deny|guilty innocent|victory defeat|peace war|friend enemy|love hate|loved hated|
like dislike|liked disliked|happy sad|pleased disappointed|optimistic pessimistic|ascending descending|
maximise minimise|maximize minimize|upper lower|top bottom|front back|inbound outbound|senior junior""".replace("\n", "")


def _antonyms() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for pair in _ANTONYM_PAIRS.split("|"):
        a, b = pair.split()
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in out.items()}


ANTONYMS: dict[str, frozenset[str]] = _antonyms()
