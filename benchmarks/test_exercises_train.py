"""The exercises' training checks, which train for minutes (tests/test_exercises.py checks the same code's plumbing
on tiny runs, in seconds):

- `python -m exercises train NAME` with the lesson's own code swapped in for the learner's lands in the band
  `train` places a learner's run in, for every exercise that trains; a sign error in the clip, which
  `check clip` rejects, is placed as not learning;
- each silent bug (`python -m exercises bug N`) moves the diagnostic its answer names out of the healthy runs'
  range, in the run the learner makes (seed 1, its lesson's recipe).

    python -m pytest benchmarks/test_exercises_train.py      # about 12 minutes on 2 cores
"""

import pytest
import torch

import exercises
from exercises import bugs, train


@pytest.mark.parametrize("name", list(train.TRAININGS))
def test_the_lessons_own_function_lands_in_the_band(name, tmp_path, monkeypatch):
    """The lesson's own code passed as the learner's function, through the same swap (or edit) a learner's goes
    through."""
    monkeypatch.chdir(tmp_path)
    report = train.train(name, exercises.EXERCISES[name].reference())
    assert report[-1].startswith("within the lesson's band"), report


def test_a_sign_error_in_the_clip_is_not_learning(tmp_path, monkeypatch):
    """-L^CLIP's sign flipped: the update makes the sampled actions with A > 0 less likely."""
    def ascending(ratio, advantages, clip_coef):
        return torch.min(ratio * advantages, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * advantages).mean()

    monkeypatch.chdir(tmp_path)
    report = train.train("clip", ascending)
    assert report[-1].startswith("not learning"), report


@pytest.mark.parametrize("number", range(1, len(bugs.BUGS) + 1))
def test_each_bug_shows_in_its_diagnostic(number, tmp_path, monkeypatch):
    bug = bugs.BUGS[number - 1]
    monkeypatch.chdir(tmp_path)
    found = bugs.medians(bugs.train(number))[bug.tag]
    normal = bugs.healthy_medians(bug.recipe)[bug.tag]
    assert not min(normal) <= found <= max(normal), (bug.tag, found, normal)
