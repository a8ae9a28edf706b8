"""The exercises' training checks, which train for minutes (tests/test_exercises.py checks the same code's plumbing
on tiny runs, in seconds):

- `python -m exercises train NAME` with the lesson's own code swapped in for the learner's lands in the band
  `train` places a learner's run in, for every exercise that trains; a sign error in the clip, which
  `check clip` rejects, is placed as not learning;
- each silent bug (`python -m exercises bug N`) moves the diagnostic its answer names out of the healthy runs'
  range, in the run the learner makes (seed 1, its lesson's recipe);
- REINFORCE (`python -m exercises train reinforce`, its own trainer): the solution's five seeds are
  exercises/README.md's record, and of the mistakes its check catches, those the README says learn do, the others
  do not (about a minute).

    python -m pytest benchmarks/test_exercises_train.py      # about 20 minutes on 2 cores

(12 minutes before the memory and masking exercises; their two checks took 398 s and 97 s on 2026-12-07, `-k
"lstm_state or masked_distribution" --durations=0`.)
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


def test_reinforces_runs_are_the_record(capsys):
    """exercises/README.md's record of the REINFORCE solution's five seeds is what its command prints today (the
    seconds each took aside)."""
    import re

    from benchmarks.core.launch import ROOT
    from exercises import reinforce_cartpole

    assert reinforce_cartpole.main(["--seeds", "1", "2", "3", "4", "5"]) == 0
    printed = [re.sub(r", [0-9.]+ s$", "", line) for line in capsys.readouterr().out.splitlines()]
    text = (ROOT / "exercises" / "README.md").read_text()
    block = text.split("<!-- reinforce-runs:begin -->\n```\n")[1].split("```\n<!-- reinforce-runs:end -->")[0]
    assert printed == block.splitlines()
    first_and_last = [tuple(map(float, re.findall(r"first ([0-9.]+), last ([0-9.]+)", line)[0])) for line in printed]
    assert all(last >= reinforce_cartpole.LEARNING * first for first, last in first_and_last)  # "All five learn"
    assert all(last < 500 for _, last in first_and_last)


def _returns(rewards, dones, gamma, backwards=True, cut=True):
    """G_t as the solution computes it (backwards, cut at each episode's end), or with a mistake: the rewards so far
    (a forward loop), or summed on across episode ends."""
    returns, following = torch.zeros_like(rewards), 0.0
    for t in (reversed(range(len(rewards))) if backwards else range(len(rewards))):
        if backwards:
            following = rewards[t] + gamma * following * ((1.0 - dones[t]) if cut else 1.0)
        else:
            following = rewards[t] + gamma * following
        returns[t] = following
        if not backwards:
            following = following * (1.0 - dones[t])
    return returns


MISTAKES = {  # (the loss, whether `train reinforce` places it as learning)
    "the solution": (None, True),  # its own reinforce_loss
    "the sign flipped": (lambda lp, r, d, g: (lp * _returns(r, d, g)).mean(), False),
    "pi for log pi": (lambda lp, r, d, g: -(lp.exp() * _returns(r, d, g)).mean(), False),
    "the rewards so far": (lambda lp, r, d, g: -(lp * _returns(r, d, g, backwards=False)).mean(), False),
    "summed across episode ends": (lambda lp, r, d, g: -(lp * _returns(r, d, g, cut=False)).mean(), False),
    "gamma ignored": (lambda lp, r, d, g: -(lp * _returns(r, d, 1.0)).mean(), True),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_reinforce_with_each_mistake(mistake):
    """`train reinforce` (seed 1, 30 batches) with the solution, then with each of five mistakes the check catches:
    which still learn, as exercises/README.md says."""
    from exercises import reinforce_cartpole

    fn, learns = MISTAKES[mistake]
    report = reinforce_cartpole.report(None if mistake == "the solution" else fn)
    assert report[-1].startswith("learning" if learns else "not learning"), report
