from hcat_pipeline.core.metrics import nli
from hcat_pipeline.core.text import STOPWORDS, content_words
from hcat_pipeline.golden import selection


def test_one_stop_word_list():
    # the NLI features were trained with exactly this list: switching nli.py to core.text changes nothing
    assert STOPWORDS == nli.STOPWORDS and len(STOPWORDS) == 123
    # selection's shorter list is a subset (switching it drops a few more function words)
    assert selection.STOPWORDS <= STOPWORDS
    assert content_words(["the", "tower", "is", "not", "tall", "yeah"]) == ["tower", "tall"]
