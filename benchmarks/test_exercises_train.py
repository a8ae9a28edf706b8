"""The exercises' training check: `python -m exercises train NAME --lesson` (the lesson's own function swapped in
for itself) lands in the band `train` places a learner's run in, for every exercise that trains; and a sign error
in the clip, which `check clip` rejects, is placed as not learning.

    python -m pytest benchmarks/test_exercises_train.py      # 5 minutes on 2 cores

Here, not in tests/, because it trains for minutes (tests/test_exercises.py checks train's plumbing on a tiny run).
"""

import pytest
import torch

from exercises import train


@pytest.mark.parametrize("name", list(train.TRAININGS))
def test_the_lessons_own_function_lands_in_the_band(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = train.train(name, None)
    assert report[-1].startswith("within the lesson's band"), report


def test_a_sign_error_in_the_clip_is_not_learning(tmp_path, monkeypatch):
    """-L^CLIP's sign flipped: the update makes the sampled actions with A > 0 less likely."""
    def ascending(ratio, advantages, clip_coef):
        return torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages).mean()

    monkeypatch.chdir(tmp_path)
    report = train.train("clip", ascending)
    assert report[-1].startswith("not learning"), report
