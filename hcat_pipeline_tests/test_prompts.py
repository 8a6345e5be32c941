"""The one prompt loader: rendering chat sections, placeholders checked on the template."""

from __future__ import annotations

import pytest

from hcat_pipeline.common.prompts import load_prompt


def test_render_values_may_contain_braces_and_placeholders_are_checked_on_the_template(tmp_path):
    (tmp_path / "t.txt").write_text("### system\nS\n### user\nPassage: {{passage}}\nAnswer: {{answer}}\n")
    t = load_prompt("t", tmp_path)
    msgs = t.render(passage='f"{{x}}" escapes braces; {{answer}} stays literal', answer="A")
    assert msgs[1]["content"] == 'Passage: f"{{x}}" escapes braces; {{answer}} stays literal\nAnswer: A'
    with pytest.raises(ValueError, match="answer"):
        t.render(passage="p")
