"""The language of a text, offline: ``langid``'s packaged model restricted to ``DETECTABLE`` (short texts stay stable).
One reader for the format checks (``behaviour.formats``), the test setting's question languages
(``reports.generalisation``) and the language coverage of multilingual synthesis (``metrics.language_coverage``)."""

from __future__ import annotations

from functools import lru_cache

DETECTABLE = ("en", "de", "fr", "es", "it", "nl", "pt")  # langid is restricted to these (short answers stay stable)


@lru_cache(maxsize=1)
def _identifier():
    from langid.langid import LanguageIdentifier, model

    ident = LanguageIdentifier.from_modelstring(model, norm_probs=True)
    ident.set_languages(list(DETECTABLE))
    return ident


def detect_language(text: str) -> tuple[str, float]:
    """(ISO 639-1 code, probability) of ``text`` among ``DETECTABLE``."""
    code, p = _identifier().classify(text)
    return code, float(p)
