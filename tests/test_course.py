"""The course's lesson 0 (course/ppo-on-one-page.md) and its pictures (course/figures/), drawn by course.figures from
the lessons' own code: each committed figure and generated block is what the code draws today, each pseudocode line
links to the line of ppo_cartpole.py that does it, and what the pictures show holds by hand."""

import json
import re

import gymnasium as gym
import numpy as np
import pytest

from benchmarks.core import records
from conftest import ROOT
from course import figures

LESSON0 = ROOT / "course" / "ppo-on-one-page.md"


@pytest.fixture(scope="module")
def drawn() -> dict[str, bytes]:
    return figures.figures()


@pytest.mark.parametrize("name", ["clip.svg", "gae.svg", "loop.svg", "networks.svg", "autoreset.svg", "atari.svg"])
def test_each_committed_figure_is_what_the_code_draws(drawn, name):
    assert (figures.FIGURES / name).read_bytes() == drawn[name], f"run python -m course.figures to redraw {name}"
    assert b"<dc:date>" not in drawn[name]  # no date: the same code draws the same bytes


def test_hashed_ids_are_numbered_so_numpy_versions_draw_the_same_bytes():
    """NumPy 1 and 2 write a clip rectangle's corners differently, and matplotlib hashes that text into the id."""
    one = b'<clipPath id="p10bb47d450"/><use xlink:href="#mb5b4e79cfe"/><g clip-path="url(#p10bb47d450)"/>' \
          b'<path id="mb5b4e79cfe"/>'
    two = one.replace(b"10bb47d450", b"a7fda9d77b").replace(b"b5b4e79cfe", b"0123456789")
    assert figures.number_ids(one) == figures.number_ids(two) == \
        b'<clipPath id="p0"/><use xlink:href="#m1"/><g clip-path="url(#p0)"/><path id="m1"/>'
    assert figures.number_ids(b'<text>face0123456</text>') == b'<text>face0123456</text>'  # not an id: kept


def test_lesson0_holds_the_generated_blocks_and_links_every_figure():
    text = LESSON0.read_text()
    assert figures.lesson0(text) == text, "run python -m course.figures to rewrite the generated blocks"
    linked = set(re.findall(r"\]\(figures/(\w+\.svg)\)", text))
    assert linked == {path.name for path in figures.FIGURES.glob("*.svg")}


def test_each_pseudocode_line_links_to_the_line_that_does_it():
    """A link's line number is the first line of ppo_cartpole.py holding the line's needle: moving the code moves
    the link (lesson0's check above fails until the block is rewritten)."""
    lines = (ROOT / "ppo_cartpole.py").read_text().splitlines()
    block = LESSON0.read_text().split("<!-- loop:begin -->")[1].split("<!-- loop:end -->")[0]
    links = re.findall(r"\[`([^`]+)`\]\(\.\./ppo_cartpole\.py#L(\d+)\)", block)
    assert [text for text, _ in links] == [text.strip() for text, _ in figures.PSEUDOCODE]
    for (_, line), (_, needle) in zip(links, figures.PSEUDOCODE):
        assert needle in lines[int(line) - 1], (line, needle)
    assert len(links) >= 10


def test_the_clip_is_flat_where_the_paper_says():
    """Figure 1 by hand: for A > 0 the objective is r A up to 1 + eps and flat beyond, with slope A then 0; for A < 0
    it is flat below 1 - eps, r A above."""
    eps = 0.2
    for advantage in (1.0, -1.0):
        r, value, slope = figures.clip_curves(advantage, eps)
        inside = (r > 1 - eps + 1e-9) & (r < 1 + eps - 1e-9)
        assert np.allclose(value[inside], r[inside] * advantage) and np.allclose(slope[inside], advantage)
        flat = r > 1 + eps + 1e-9 if advantage > 0 else r < 1 - eps - 1e-9
        assert np.allclose(value[flat], (1 + eps if advantage > 0 else 1 - eps) * advantage)
        assert np.all(slope[flat] == 0)
        other = r < 1 - eps - 1e-9 if advantage > 0 else r > 1 + eps + 1e-9  # the side the min never clips
        assert np.allclose(value[other], r[other] * advantage) and np.allclose(slope[other], advantage)


def test_the_worked_example_by_hand():
    """lambda = 0: A_t = delta_t = r_t + gamma V(s_{t+1}) - V(s_t), with V(s_{t+1}) = 0 after the termination (t = 2)
    and V(last observation) = 2.4 after the truncation (t = 4); lambda = 1: the discounted rewards to the episode's
    end (or to the bootstrap) minus V(s_t)."""
    found = figures.gae_example()
    assert np.allclose(found[0.0], [1 + 0.9 * 1.5 - 2, 1 + 0.9 * 0.8 - 1.5, 1 - 0.8, 1 + 0.9 * 2.6 - 3,
                                    1 + 0.9 * 2.4 - 2.6, 1 + 0.9 * 2.0 - 2.2])
    assert np.allclose(found[1.0][:3], [1 + 0.9 + 0.81 - 2, 1 + 0.9 - 1.5, 1 - 0.8])
    assert np.allclose(found[1.0][3:5], [1 + 0.9 * (1 + 0.9 * 2.4) - 3, 1 + 0.9 * 2.4 - 2.6])
    table = figures.gae_table()
    assert "| 2 | 1 | 0.8 | terminated | 0 (no future) | +0.200 | +0.200 | +0.200 |" in table


def test_autoreset_as_gymnasium_does_it():
    """The default mode returns the ended episode's last observation, then spends a step on the reset; SAME_STEP
    returns the new episode's first observation at once, the last one in info["final_obs"]."""
    next_step = figures.autoreset_rows(gym.vector.AutoresetMode.NEXT_STEP)
    same_step = figures.autoreset_rows(gym.vector.AutoresetMode.SAME_STEP)
    assert next_step[3] == (3, 3.0, True, "a transition") and next_step[4][3] == "a reset: no transition"
    assert same_step[3] == (3, 0.0, True, "ends: final_obs 3") and same_step[4] == (4, 1.0, False, "a transition")


def test_the_atari_figure_shows_the_ball_moving():
    (_, raw), (_, maxed), (_, small), (_, frames) = figures.atari_frames()
    assert raw.shape == (210, 160, 3) and maxed.shape == (210, 160, 3) and small.shape == (84, 84)
    assert frames.shape == (4, 84, 84) and np.array_equal(frames[-1], small)
    spots = figures.ball(frames)
    assert all(spots) and len({spot for spot in spots}) == 4  # a ball found in each frame, never in the same place


def test_check_mode_finds_a_stale_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    (tmp_path / "clip.svg").write_bytes(b"<svg/>")
    assert figures.main(["--check"]) == 1
    assert (tmp_path / "clip.svg").read_bytes() == b"<svg/>"  # --check writes nothing


def test_differences_hold_each_number_to_its_tolerance():
    """A recorded figure's numbers by hand: keys, lengths, words, ints and bools exactly; a float within absolute +
    relative * the larger of the two; exactly 0 where the record has 0, and only there; a NaN never agrees."""
    tolerance = {"relative": 0.1, "absolute": 0.01}
    recorded = {"words": ["was", "great"], "board": [1, 0, -1], "pi": [0.0, 0.5, 0.5], "beta": 2.0, "done": True}

    def lines(**changed):
        return figures.differences(recorded, {**recorded, **changed}, tolerance)

    assert lines() == [] and lines(beta=2.2) == [] and lines(beta=1.81) == []  # 0.01 + 0.1 * 2.2, 0.01 + 0.1 * 2
    assert lines(beta=2.3) == ["numbers.beta: 2 recorded, 2.3 now (beyond the tolerance)"]
    assert lines(beta=float("nan")) and lines(beta=float("inf"))
    assert lines(pi=[0.0, 0.505, 0.495]) == []
    assert lines(pi=[1e-9, 0.5, 0.5]) == ["numbers.pi[0]: 0.0 recorded, 1e-09 now (exactly 0 on one side only)"]
    assert lines(pi=[0.0, 0.0, 0.5]) == ["numbers.pi[1]: 0.5 recorded, 0.0 now (exactly 0 on one side only)"]
    assert lines(pi=[0.0, 0.5]) == ["numbers.pi: 3 values recorded, 2 now"]
    assert lines(words=["was", "grate"]) == ["numbers.words[1]: 'great' recorded, 'grate' now"]
    assert lines(board=[1, 0, 1]) == ["numbers.board[2]: -1 recorded, 1 now"]
    assert lines(board=[1.0, 0, -1]) == ["numbers.board[0]: 1 recorded, 1.0 now"]  # an int recorded stays an int
    assert lines(done=False) == ["numbers.done: True recorded, False now"]
    assert figures.differences(recorded, {**recorded, "extra": 1}, tolerance)[0].startswith("numbers: keys")


def test_a_record_is_kept_within_its_tolerance_and_written_again_past_it(tmp_path, monkeypatch, capsys):
    """python -m course.figures on a recorded figure (a stand-in here): with no record it records what the code
    computes and draws from it; a number moved within the tolerance keeps the committed record (another processor
    changes no file); moved past it, --check reports the record and the figure and writes nothing, and the next
    run records and redraws; --record records even within the tolerance."""
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    for plain in ("clip", "gae", "loop", "network", "autoreset", "atari"):
        monkeypatch.setattr(figures, f"{plain}_figure", lambda: b"")
    computed = {"x": 1.0}

    def draw(recorded):
        return json.dumps((recorded or figures.record("stand-in.svg"))["numbers"]).encode()

    monkeypatch.setattr(figures, "recorded_figures", lambda: {"stand-in.svg": figures.Recorded(
        lambda: dict(computed), draw, {"relative": 0.1, "absolute": 0.0})})
    path, svg = tmp_path / "records" / "stand-in.json", tmp_path / "stand-in.svg"

    assert figures.main([]) == 0 and "stand-in.json (no record)" in capsys.readouterr().out
    made = json.loads(path.read_text())
    assert made["numbers"] == {"x": 1.0} and made["processor"] == records.processor()
    assert made["versions"] == records.versions() and made["command"] == "python -m course.figures"
    assert svg.read_bytes() == b'{"x": 1.0}'

    computed["x"] = 1.05
    assert figures.main(["--check"]) == 0
    assert figures.main([]) == 0 and json.loads(path.read_text()) == made and svg.read_bytes() == b'{"x": 1.0}'

    computed["x"] = 1.5
    capsys.readouterr()
    assert figures.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "stand-in.json (numbers.x: 1 recorded, 1.5 now (beyond the tolerance))" in out and "stand-in.svg" in out
    assert json.loads(path.read_text()) == made and svg.read_bytes() == b'{"x": 1.0}'  # --check writes nothing
    assert figures.main([]) == 0
    assert json.loads(path.read_text())["numbers"] == {"x": 1.5} and svg.read_bytes() == b'{"x": 1.5}'

    computed["x"] = 1.52
    assert figures.main([]) == 0 and json.loads(path.read_text())["numbers"] == {"x": 1.5}
    assert figures.main(["--record"]) == 0 and json.loads(path.read_text())["numbers"] == {"x": 1.52}
    assert svg.read_bytes() == b'{"x": 1.52}'
    assert figures.main(["--check"]) == 0


def test_lesson0_page_typesets_every_formula_and_links_into_the_site(tmp_path):
    """The site's lesson-0.html: each $...$ and $$...$$ typeset by KaTeX (none left as text), each figure copied
    beside it, each pseudocode line a link to its line of the CartPole lesson page, every answer folded."""
    from render.course import _MATH, lesson0_page

    html = lesson0_page(ROOT, tmp_path)
    text = LESSON0.read_text()
    assert html.count('<span class="katex">') == len(_MATH.findall(text)) >= 100
    assert "MATHPLACE" not in html and "$$" not in html
    sources = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(sources) == 9 and all((tmp_path / src).is_file() for src in sources)  # (language, memory, masking)
    lines = re.findall(r'href="lessons/ppo_cartpole\.html#L(\d+)"', html)
    assert len(lines) == len(figures.PSEUDOCODE)
    assert html.count("<details>") == text.count("<details>") >= 4
    assert html.count("<summary>") == html.count("<details>")


def test_the_index_reads_lesson_0_first(tmp_path):
    """The site's first page sends a learner to lesson 0 first (its first link), and lists it first in the path."""
    from render.index import index_page

    html = index_page(ROOT, tmp_path, [])
    assert re.search(r'<a href="([^"]+)"', html.split("<h1>")[1]).group(1) == "lesson-0.html"
    path = html.split('<ol class="path" start="0">')[1].split("</ol>")[0]
    assert path.index('href="lesson-0.html"') < path.index('href="lessons/ppo_cartpole.html"')
    items = path.split("<li>")
    cartpole = next(item for item in items if 'href="lessons/ppo_cartpole.html"' in item)
    assert "python -m exercises check gae" in cartpole  # each exercise after the lesson it belongs to
    lunar = next(item for item in items if 'href="lessons/ppo_lunarlander_vec.html"' in item)
    assert "<code>value_clip</code>" in lunar


@pytest.mark.parametrize("module", [lesson.module for lesson in __import__("course.lessons").lessons.LESSONS])
def test_each_lesson_has_three_check_questions_with_answers(module):
    """course/checks/<module>.md: three numbered questions, each ending in "?", each answer in a <details> of its
    own, its math typesettable (checked when the site is built, render.course.checks_html)."""
    text = (ROOT / "course" / "checks" / f"{module}.md").read_text()
    assert text.startswith(f"# Check questions: {module}.py\n")
    questions = re.findall(r"^\*\*(\d)\.\*\* (.+?)\n\n<details><summary>Answer</summary>\n\n(.+?)\n\n</details>",
                           text, re.M | re.S)
    assert [n for n, _, _ in questions] == ["1", "2", "3"] and text.count("<details>") == 3
    assert all(q.rstrip().endswith("?") and len(a.split()) >= 15 for _, q, a in questions)


def test_lesson0_defines_the_kl_with_a_two_action_example_that_computes():
    """Lesson 0 defines the KL before TRPO's constraint uses it; its worked example's numbers are what the formula
    and the lessons' approx_kl estimator ((r - 1) - log r, ppo_cartpole.py's line) give, to the digits printed."""
    import math

    text = LESSON0.read_text()
    section = text.split("## How far a policy moved: the KL divergence")[1].split("\n## ")[0]
    assert text.index("## How far a policy moved") < text.index("TRPO (arXiv:1502.05477)")
    assert r"\mathrm{KL}[p, q] = \sum_a p(a) \log \frac{p(a)}{q(a)}" in section
    p, q = (0.5, 0.5), (0.6, 0.4)
    kl_pq = sum(a * math.log(a / b) for a, b in zip(p, q))
    kl_qp = sum(b * math.log(b / a) for a, b in zip(p, q))
    assert f"= {kl_pq:.4f}$" in section and f"= {kl_qp:.4f}$: it is not symmetric" in section
    per_action = [(b / a - 1) - math.log(b / a) for a, b in zip(p, q)]
    assert f"gives $0.2 - \\log 1.2 = {per_action[0]:.4f}$" in section and f"gives ${per_action[1]:.4f}$" in section
    assert f"average ${sum(pa * v for pa, v in zip(p, per_action)):.4f}$, the KL itself" in section
    assert "approx_kl = ((ratio - 1) - logratio).mean()" in (ROOT / "ppo_cartpole.py").read_text()
    glossary = text.split("## Glossary")[1]
    assert "**KL divergence**" in glossary and "(#how-far-a-policy-moved-the-kl-divergence)" in glossary


def test_lesson0_derives_the_policy_gradient_by_the_log_derivative():
    """The main text takes grad E[R] to E[R grad log p] by grad p = p grad log p, drops the environment's terms, then
    gives eq. 1 and the loss L^PG of eq. 2, and links the REINFORCE exercise there; the identity holds by autograd on
    a two-action softmax (the gradient of sum_a pi(a) R(a) is sum_a pi(a) grad log pi(a) R(a))."""
    import torch

    import exercises

    text = LESSON0.read_text()
    section = text.split("## A policy and its gradient")[1].split("\n## ")[0]
    steps = [r"$\nabla_\theta p_\theta = p_\theta\, \nabla_\theta \log p_\theta$",
             r"= \mathbb{E}_{\tau \sim \pi_\theta}\left[R(\tau)\, \nabla_\theta \log p_\theta(\tau)\right]$$",
             r"$$\nabla_\theta \log p_\theta(\tau) = \sum_t \nabla_\theta \log \pi_\theta(a_t \mid s_t)$$",
             r"$$\hat{g} = \hat{\mathbb{E}}_t\left[\nabla_\theta \log \pi_\theta(a_t \mid s_t)\, \hat{A}_t\right]$$",
             r"$$L^{PG}(\theta) = \hat{\mathbb{E}}_t\left[\log \pi_\theta(a_t \mid s_t)\, \hat{A}_t\right]$$",
             "[`reinforce`](../exercises/reinforce.py)"]
    assert all(step in section for step in steps), [step for step in steps if step not in section]
    assert [section.index(step) for step in steps] == sorted(section.index(step) for step in steps)
    assert "(eq. 1)" in section and "(eq. 2)" in section and "reward-to-go" in section
    assert (ROOT / "exercises" / "reinforce.py").is_file() and list(exercises.EXERCISES)[0] == "reinforce"

    logits = torch.tensor([0.3, -0.2], requires_grad=True)
    returns = torch.tensor([1.0, 3.0])
    (grad_j,) = torch.autograd.grad((logits.softmax(0) * returns).sum(), logits)
    pi = logits.softmax(0).detach()
    grad_log = [torch.autograd.grad(logits.log_softmax(0)[a], logits)[0] for a in range(2)]
    assert torch.allclose(grad_j, sum(pi[a] * grad_log[a] * returns[a] for a in range(2)))


def test_lesson0_says_the_policy_loss_is_no_measure_of_progress():
    """The page's claim, computed with the lesson's own code (ppo_cartpole.py's clipped_surrogate_loss, its minibatch
    normalization): at r = 1 the logged loss is 0 whatever the advantages' scale, and otherwise at most the
    root-mean-square of r - 1 in size, for advantages of any scale and mean."""
    import torch

    import ppo_cartpole

    text = LESSON0.read_text()
    loop = text.split("## The whole loop")[1].split("\n## ")[0]
    assert "**The policy loss is not a measure of progress.**" in loop
    assert "exactly $-\\hat{\\mathbb{E}}_t[\\hat{A}_t] = 0$" in loop and "root-mean-square of $r_t - 1$" in loop
    assert "**policy_loss** (`losses/policy_loss`)" in text.split("## Glossary")[1]
    source = (ROOT / "ppo_cartpole.py").read_text()
    normalize = "mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)"
    assert normalize in source and '"losses/policy_loss": pg_loss.item()' in source
    generator = torch.Generator().manual_seed(0)
    for k in range(200):
        size = 2 + k % 60
        advantages = (torch.randn(size, generator=generator, dtype=torch.float64) * 10.0 ** (k % 7 - 3)
                      + 10.0 ** (k % 5))
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        ratio = 1 + (torch.rand(size, generator=generator, dtype=torch.float64) - 0.5) * (k % 4) * 0.4
        loss = ppo_cartpole.clipped_surrogate_loss(ratio, advantages, 0.2).item()
        assert abs(loss) <= ((ratio - 1) ** 2).mean().sqrt().item() + 1e-9  # (1e-9: float64 rounding)
        if k % 4 == 0:  # r = 1: exactly the mean of the normalized advantages
            assert abs(loss) < 1e-9
