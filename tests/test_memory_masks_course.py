"""Lesson 0's section "Memory and masks" (course/ppo-on-one-page.md) and its figures, course/figures/memory.svg and
masking.svg: each committed figure is what its record draws, each record what the lessons' own code computes today
(ppo_lstm_memory.py's env, rollout and get_states; a short run of ppo_action_masking.py's train() and its Agent)
within the figure's tolerance, and a broken get_states or a mask left out moves it past that; what the figures show
holds by hand; the section's claims and check answers are what the lessons' code and gymnasium's CartPole give; the
glossary defines its terms."""

import math
import re

import numpy as np
import pytest
import torch

import ppo_action_masking
import ppo_lstm_memory
from conftest import ROOT
from course import figures

LESSON0 = ROOT / "course" / "ppo-on-one-page.md"
TEXT = LESSON0.read_text()
HEADING = "## Memory and masks\n"
SECTION = TEXT.split(HEADING)[1].split("\n## ")[0] if HEADING in TEXT else ""
FLAT = " ".join(SECTION.split())  # the section's words, its line breaks ignored
OTHERS = ("clip", "gae", "loop", "network", "autoreset", "atari", "language")  # (redrawn by the other course tests)


@pytest.fixture
def fresh_board():
    """masking_board's cache emptied before and after: a test that redraws it with a broken lesson leaves no broken
    board behind."""
    figures.masking_board.cache_clear()
    yield
    figures.masking_board.cache_clear()


@pytest.mark.parametrize("name, words", [
    ("memory.svg", ("CartPoleNoVel-v1", "get_states", "rollout.initial_state", "untrained Agent", "reset seed",
                    "largest difference 0", "dotted: an episode", "records/memory.json")),
    ("masking.svg", ("Agent.get_action_and_value", "train()", "updates of", "seed", "exactly 0", "entropy",
                     "sum over the empty cells", "records/masking.json"))])
def test_each_committed_figure_is_drawn_from_its_record(name, words, monkeypatch):
    """Each figure is what its record draws, the same bytes on any processor, and says what it shows and where its
    numbers were computed."""
    drawn = figures.recorded_figures()[name].draw(None)
    assert (figures.FIGURES / name).read_bytes() == drawn, "run python -m course.figures to redraw it"
    for other in OTHERS:
        monkeypatch.setattr(figures, f"{other}_figure", lambda *recorded: b"")
    assert figures.figures()[name] == drawn  # what python -m course.figures writes
    assert b"<dc:date>" not in drawn
    text = drawn.decode()
    for word in words + ("one CPU thread", figures.record(name)["processor"]):
        assert word in text, word  # the figure says what it shows


@pytest.mark.parametrize("name", ["memory.svg", "masking.svg"])
def test_each_record_is_what_the_lessons_code_computes_today(name, fresh_board):
    """The lessons' own code (the memory lesson's env, rollout and get_states; a short run of the masking lesson's
    train() and its Agent), now, on this machine, gives each record's numbers within the figure's tolerance, and
    exactly 0 where the record has 0."""
    assert not figures.moved(name, figures.today(name)), "run python -m course.figures to record and redraw it"


def test_a_state_never_wiped_moves_the_memory_record(monkeypatch):
    """The right panel is the state ppo_lstm_memory.py's get_states hands its cell: with the wipe taken out (the state
    carried across episode starts), the numbers are not the record's: no state is 0 at a start."""

    def never_wiped(self, x, state, starts):
        features, outputs = self.encoder(self.normalize(x)), []
        for feature in features:
            state = self.memory(feature, state)
            outputs.append(state[0])
        return torch.stack(outputs), state

    monkeypatch.setattr(ppo_lstm_memory.Agent, "get_states", never_wiped)
    lines = figures.moved("memory.svg", figures.today("memory.svg"))
    assert any(line.startswith("numbers.norms[") and "exactly 0 on one side only" in line for line in lines), lines


def test_a_mask_left_out_moves_the_masking_record(monkeypatch, fresh_board):
    """The right panel is ppo_action_masking.py's masked pi: with the lesson's get_action_and_value offering every
    cell whatever the mask says (in training and on the board), the numbers are not the record's: no taken cell's pi
    is 0."""
    own = ppo_action_masking.Agent.get_action_and_value

    def unmasked(self, x, mask, action=None, greedy=False):
        return own(self, x, torch.ones_like(mask), action, greedy)

    monkeypatch.setattr(ppo_action_masking.Agent, "get_action_and_value", unmasked)
    lines = figures.moved("masking.svg", figures.today("masking.svg"))
    assert any(line.startswith("numbers.masked.pi[") and "exactly 0 on one side only" in line for line in lines), lines


def test_one_observation_hides_which_way_the_pole_turns():
    """The left panel by hand: the observation is the state's (x, theta); its two marked steps have nearly the same
    angle and angular velocities of opposite signs; and the page's frame-stack claim, from CartPole's Euler step:
    (theta_t - theta_{t-1}) / tau is theta_dot of the step before, to float32 rounding."""
    episode = figures.novel_episode()
    obs, state = episode["obs"], episode["state"]
    assert np.array_equal(obs, state[:, [0, 2]].astype(np.float32))
    t1, t2 = episode["pair"]
    assert t2 - t1 >= 3 and abs(obs[t1, 1] - obs[t2, 1]) < 0.005 and abs(obs[t1, 1]) > 0.03
    assert state[t1, 3] * state[t2, 3] < 0
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    env = CartPoleEnv()
    assert env.tau == 0.02 and env.kinematics_integrator == "euler" and "$\\tau = 0.02$ s" in FLAT
    difference = (state[1:, 2] - state[:-1, 2]) / env.tau
    assert np.allclose(difference, state[:-1, 3], rtol=1e-9, atol=1e-9)  # the physics' own step, exact
    seen = (obs[1:, 1].astype(np.float64) - obs[:-1, 1]) / env.tau
    assert np.abs(seen - state[:-1, 3]).max() < 1e-4 / env.tau  # the observation's float32 rounding, no more


def test_the_lstm_state_is_wiped_at_starts_carried_otherwise_and_replayed_exactly():
    """The right panel by hand: the state the cell is handed is exactly 0 at each episode's first step, and where no
    episode starts it is the state the step before left (the rollout's first step too: the state kept at its start,
    not 0); the replay from rollout.initial_state gives the rollout's log-probabilities to the bit."""
    found = figures.lstm_rollout()
    rollout, handed = found["rollout"], found["handed"]
    steps, envs = rollout.starts.shape
    assert handed.shape[:2] == (steps, envs) == (figures.MEMORY_STEPS, figures.MEMORY_ENVS)
    starts = rollout.starts.astype(bool)
    assert starts.any() and np.all(handed[starts] == 0)
    assert np.all(np.linalg.norm(handed[~starts], axis=-1) > 0)
    assert not starts[0].all()  # the rollout starts mid-episode: from the kept state
    kept = torch.cat(rollout.initial_state, -1).numpy()
    assert np.array_equal(handed[0][~starts[0]], kept[~starts[0]]) and np.abs(kept).max() > 0
    with torch.no_grad():
        stepped = [torch.cat(found["agent"].memory(feature, (torch.as_tensor(h[:, :h.shape[1] // 2]),
                                                            torch.as_tensor(h[:, h.shape[1] // 2:]))), -1).numpy()
                   for feature, h in zip(found["features"][:-1], handed[:-1])]
    for t in range(1, steps):
        carried = ~starts[t]
        assert np.allclose(handed[t][carried], stepped[t - 1][carried], atol=1e-6)
    assert np.array_equal(found["logprobs"], rollout.logprobs)


def test_the_masked_board_is_the_unmasked_one_renormalized():
    """The masking figure by hand: the mask is the board's empty cells; the masked pi is exactly 0 on the taken cells
    and, on the empty ones, the unmasked pi divided by its sum over them (the r_t a forgotten mask would give each);
    each entropy is -sum pi log pi over the cells it offers; unmasked, much of pi lands on taken cells."""
    found = figures.masking_board()
    board, valid = found["board"], found["mask"] == 1
    assert np.array_equal(valid, board == 0) and 0 < valid.sum() < 9
    masked, unmasked = found["masked"]["pi"], found["unmasked"]["pi"]
    assert np.all(masked[~valid] == 0) and math.isclose(masked.sum(), 1, rel_tol=1e-6)
    share = unmasked[valid].sum()
    assert np.allclose(masked[valid], unmasked[valid] / share, rtol=1e-5)
    assert unmasked[~valid].sum() > 0.25  # "much of the probability lands on taken cells"
    for name, offered in (("masked", valid), ("unmasked", np.ones(9, bool))):
        pi = found[name]["pi"][offered]
        assert math.isclose(found[name]["entropy"], float(-(pi * np.log(pi)).sum()), rel_tol=1e-5)


def test_the_masking_check_answer_is_what_the_lessons_agent_gives():
    """The section's check: logits 0 and ln 3 for two valid actions, 0 and 0 for two invalid ones; the lesson's
    get_action_and_value (its trunk and actor stood in by the identity) gives pi = (1/4, 3/4, 0, 0) with the mask, and
    with every action offered 1/6 and 3/6 on the valid ones: r_t = 2/3 for both, the share 4/6."""
    import types

    stand_in = types.SimpleNamespace(trunk=lambda x: x, actor=lambda h: h, critic=lambda h: torch.zeros(1))
    logits = torch.tensor([0.0, math.log(3), 0.0, 0.0], dtype=torch.float64)

    def pi(mask):
        return torch.stack([ppo_action_masking.Agent.get_action_and_value(stand_in, logits, torch.tensor(mask),
                                                                           torch.tensor(a))[1] for a in range(4)]).exp()

    masked, unmasked = pi([1, 1, 0, 0]), pi([1, 1, 1, 1])
    assert torch.allclose(masked, torch.tensor([0.25, 0.75, 0, 0], dtype=torch.float64)) and masked[2:].eq(0).all()
    assert torch.allclose(unmasked[:2], torch.tensor([1 / 6, 3 / 6], dtype=torch.float64))
    assert torch.allclose(unmasked[:2] / masked[:2], torch.tensor(2 / 3, dtype=torch.float64))
    assert "$r_t = (1/6)/(1/4) = (3/6)/(3/4) = 2/3$" in FLAT and "the share $4/6$" in FLAT


def test_the_section_names_both_lessons_what_they_call_and_where_it_sits():
    assert SECTION, "lesson 0 has no section ## Memory and masks"
    assert TEXT.index("## Vector envs and pixels") < TEXT.index(HEADING) < TEXT.index("## From games to language")
    for link in ("[`ppo_lstm_memory.py`](../ppo_lstm_memory.py)", "[`ppo_action_masking.py`](../ppo_action_masking.py)",
                 "](figures/memory.svg)", "](figures/masking.svg)", "arXiv:2006.14171"):
        assert link in SECTION, link
    assert hasattr(ppo_lstm_memory.Agent, "get_states") and hasattr(ppo_lstm_memory, "collect_rollout")
    assert ppo_lstm_memory.Rollout(1, 1, (2,)).initial_state is None  # the field the section names
    lstm_flags = {f.name for f in __import__("dataclasses").fields(ppo_lstm_memory.Args)}
    assert {"lstm", "frame_stack"} <= lstm_flags and "`--no-lstm --frame-stack 4`" in FLAT
    masking = ppo_action_masking.Args()
    assert masking.mask_actions and "`--no-mask-actions`" in FLAT
    assert "`--invalid-action lose` ends the game lost, `pass` wastes the move" in FLAT
    source = (ROOT / "ppo_action_masking.py").read_text()
    assert "masked_fill(~valid, -torch.inf)" in source and 'info["action_mask"]' in source
    assert "log_pi.masked_fill(~valid, 0.0)" in source  # the entropy's invalid terms left out
    assert "(1.0 - start)" in (ROOT / "ppo_lstm_memory.py").read_text()
    assert "`MaskableCategorical` writes $-10^8$" in FLAT


def test_the_glossary_defines_the_memory_and_masking_terms():
    glossary = TEXT.split("## Glossary")[1].split("\n## ")[0]
    entries = re.findall(r"^- \*\*([^*]+)\*\*", glossary, re.M)
    for term in ("Partial observability", "LSTM state", "Action mask"):
        assert term in entries, term
    assert "(#memory-and-masks)" in glossary
