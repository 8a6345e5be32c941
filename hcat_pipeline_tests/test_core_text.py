from hcat_pipeline.common.text import STOPWORDS, content_words
from hcat_pipeline.golden import selection
from hcat_pipeline.metrics.nli import api as nli


def test_one_stop_word_list():
    # the NLI features were trained with exactly this list: switching nli.py to common.text changes nothing
    assert STOPWORDS == nli.STOPWORDS and len(STOPWORDS) == 123
    # selection's shorter list is a subset (switching it drops a few more function words)
    assert selection.STOPWORDS <= STOPWORDS
    assert content_words(["the", "tower", "is", "not", "tall", "yeah"]) == ["tower", "tall"]
