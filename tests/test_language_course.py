"""Lesson 0's section "From games to language" (course/ppo-on-one-page.md) and its figure, course/figures/language.svg:
the committed figure is what its record draws, the record what a short run of ppo_rlhf_tiny.py's own train() and
per_token_rewards computes today (within the figure's tolerance: a broken per_token_rewards moves it past that), what
it shows holds by hand, the GRPO table and check answer are what grpo_rlhf_tiny.py's group_advantages gives, and
the section names and links both language lessons."""

import math
import re

import pytest
import torch

import grpo_rlhf_tiny
import ppo_rlhf_tiny
from conftest import ROOT
from course import figures

LESSON0 = ROOT / "course" / "ppo-on-one-page.md"
TEXT = LESSON0.read_text()
HEADING = "## From games to language\n"
SECTION = TEXT.split(HEADING)[1].split("\n## ")[0] if HEADING in TEXT else ""
FLAT = " ".join(SECTION.split())  # the section's words, its line breaks ignored


@pytest.fixture(scope="module")
def samples() -> dict[str, dict]:
    return figures.language_samples()


def test_the_committed_figure_is_drawn_from_its_record(monkeypatch):
    """language.svg is what its record draws, the same bytes on any processor; the figure says its statistic and
    where its numbers were computed."""
    drawn = figures.language_figure()
    assert (figures.FIGURES / "language.svg").read_bytes() == drawn, "run python -m course.figures to redraw it"
    for other in ("clip", "gae", "loop", "network", "autoreset", "atari", "memory", "masking"):  # (drawn elsewhere)
        monkeypatch.setattr(figures, f"{other}_figure", lambda *recorded: b"")
    assert figures.figures()["language.svg"] == drawn  # what python -m course.figures writes
    assert b"<dc:date>" not in drawn
    text, recorded = drawn.decode(), figures.record("language.svg")
    for words in ("per_token_rewards", "train()", "one CPU thread", recorded["processor"], "records/language.json",
                  f"seed {figures.LANGUAGE_SAMPLE_SEED}", f"{figures.LANGUAGE_SAMPLES} responses sampled",
                  "hidden score", "KL to"):
        assert words in text, words  # the figure states its statistic


def test_the_record_is_what_the_lessons_code_computes_today():
    """A short run of ppo_rlhf_tiny.py's own train() and per_token_rewards, now, on this machine, gives the record's
    numbers within the figure's tolerance: the same run, prompts and words, each number where it was."""
    fresh = figures.today("language.svg")
    assert fresh["numbers"]["run"] == figures.LANGUAGE_RUN
    assert not figures.moved("language.svg", fresh), "run python -m course.figures to record and redraw it"


def test_a_broken_per_token_reward_moves_the_numbers_past_the_tolerance(monkeypatch):
    """The figure's bars come from the lesson's per_token_rewards: with the KL term's sign flipped, the numbers it
    records are not the committed ones (its run, already trained, kept: only the figure's rewards are broken)."""
    figures.language_run()  # (trained with the right rewards, cached)
    right = ppo_rlhf_tiny.per_token_rewards

    def flipped(scores, logprobs, ref_logprobs, mask, beta):
        return right(scores, logprobs, ref_logprobs, mask, -beta)

    monkeypatch.setattr(ppo_rlhf_tiny, "per_token_rewards", flipped)
    lines = figures.moved("language.svg", figures.today("language.svg"))
    assert any(line.startswith("numbers.after.kl_terms[1]:") for line in lines), lines
    assert not any(".before." in line for line in lines)  # before any update every KL term is 0, either sign


def test_what_the_figure_shows_holds_by_hand(samples):
    """Before PPO the policy is pi_ref: every token's KL term is exactly 0 and each response's return is R. After, the
    return of each response is R - beta sum_t (log pi - log pi_ref), R on its last token only, and the policy has
    moved (some KL term is not 0). Both answered the same prompts."""
    beta = figures.language_run()["beta"]
    before, after = samples["before"], samples["after"]
    assert torch.equal(before["rollout"].prompts, after["rollout"].prompts)
    assert torch.all(before["rollout"].logprobs == before["rollout"].ref_logprobs)
    assert torch.allclose(before["rewards"].sum(1), before["rollout"].scores)
    for sample in (before, after):
        rollout, rewards = sample["rollout"], sample["rewards"]
        assert len(rollout.scores) == figures.LANGUAGE_SAMPLES
        assert torch.allclose(rewards.sum(1), rollout.scores - beta * sample["kl"], atol=1e-5)
        last = rollout.mask.sum(1).long() - 1
        kl_terms = -beta * (rollout.logprobs - rollout.ref_logprobs)
        on_last = rewards[torch.arange(len(last)), last] - kl_terms[torch.arange(len(last)), last]
        assert torch.allclose(on_last, rollout.scores, atol=1e-5)
        assert torch.all(rewards[rollout.mask == 0] == 0)  # nothing on the padding after "."
    assert after["kl"].abs().max() > 0


def test_the_grpo_table_and_the_check_answer_are_what_group_advantages_gives():
    assert figures.lesson0(TEXT) == TEXT, "run python -m course.figures to rewrite the generated blocks"
    block = SECTION.split("<!-- grpo-example:begin -->")[1].split("<!-- grpo-example:end -->")[0]
    advantages = grpo_rlhf_tiny.group_advantages(torch.tensor(figures.GRPO_SCORES), len(figures.GRPO_SCORES))
    assert block.strip() == figures.grpo_table()
    assert f"| 1 | +1.5 | +1 | {advantages[0].item():+.3f} |" in block
    mean, std = statistics(figures.GRPO_SCORES)
    assert math.isclose(advantages[0].item(), (1.5 - mean) / (std + 1e-4), rel_tol=1e-5)
    # the check: two groups of two, scored 3 and 1, then 1.1 and 1: +-0.71 in both, whatever the gap
    pairs = grpo_rlhf_tiny.group_advantages(torch.tensor([3.0, 1.0, 1.1, 1.0]), 2)
    assert [f"{a:+.2f}" for a in pairs.tolist()] == ["+0.71", "-0.71", "+0.71", "-0.71"]
    assert "a group of two scored 3 and 1, and another of two scored 1.1 and 1" in FLAT
    assert "$\\pm 0.71$ in both" in FLAT


def statistics(scores: list[float]) -> tuple[float, float]:
    """The mean and the unbiased standard deviation, by hand."""
    mean = sum(scores) / len(scores)
    return mean, math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))


def test_the_section_names_both_lessons_and_ties_back_to_the_page():
    assert SECTION, "lesson 0 has no section ## From games to language"
    assert TEXT.index("## Vector envs and pixels") < TEXT.index("## From games to language") < TEXT.index("## Glossary")
    for link in ("[`ppo_rlhf_tiny.py`](../ppo_rlhf_tiny.py)", "[`grpo_rlhf_tiny.py`](../grpo_rlhf_tiny.py)",
                 "(#how-far-a-policy-moved-the-kl-divergence)", "(#the-alternative-a-kl-penalty)",
                 "(#gae-how-far-to-trust-v)", "(#the-advantage-and-the-baseline-v)", "](figures/language.svg)"):
        assert link in SECTION, link
    assert (ROOT / "ppo_rlhf_tiny.py").is_file() and (ROOT / "grpo_rlhf_tiny.py").is_file()
    # the functions and flags it names are the lessons'
    for name in ("per_token_rewards", "reward_model_loss", "pretrain", "AdaptiveKLController", "train"):
        assert f"`{name}" in SECTION and hasattr(ppo_rlhf_tiny, name), name
    assert "`group_advantages`" in SECTION and hasattr(grpo_rlhf_tiny, "group_advantages")
    defaults = ppo_rlhf_tiny.Hyperparameters()
    assert f"$T = {defaults.num_steps}$ tokens (`--num-steps`)" in FLAT
    assert f"a KL of {defaults.kl_target:g} nats a response (`--kl-target`)" in FLAT
    assert f"`--no-end-penalty` (${defaults.no_end_penalty:g}$)" in FLAT
    assert "The lesson takes $\\gamma = 1$" in FLAT and defaults.gamma == 1.0
    assert f"(the lesson's has {len(ppo_rlhf_tiny.VOCAB)} tokens)" in FLAT
    assert f"the means over {figures.LANGUAGE_SAMPLES} sampled responses" in FLAT


def test_the_glossary_defines_the_language_terms():
    glossary = TEXT.split("## Glossary")[1].split("\n## ")[0]
    entries = re.findall(r"^- \*\*([^*]+)\*\*", glossary, re.M)
    for term in ("Token MDP", "Reference policy", "Reward model", "GRPO"):
        assert term in entries, term
    assert "(#from-games-to-language)" in glossary
