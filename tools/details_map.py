"""The implementation-details map: which lesson implements each well-known PPO detail, and where.

The details are those of Huang et al., *The 37 Implementation Details of PPO* (the 13 core ones, the 9 Atari
ones, the 9 for continuous actions) plus KL early stopping, the paper's adaptive KL penalty (eq. 8) and the
bootstrapping of time-limit truncations. For every detail and every script, ``DETAILS`` holds either the text to
find in the script (the line it first appears on is where the detail is implemented) or the reason the
script leaves the detail out. This command writes the map as a markdown table into README.md, between the
``<!-- details-map -->`` markers, each implementation a link to its file and line, and a last column with what
switching the detail off did in the ablation studies (benchmarks/ablations.py), read from their committed
effects.

Usage::

    python -m tools.details_map            # print the table
    python -m tools.details_map --write    # rewrite the table in README.md (after a script has moved lines)
    python -m tools.details_map --check    # exit 1 when README's table is not the one the scripts give today

tests/test_details_map.py runs --check and, independently of this module, reads README's table back and checks
that every ``file#Lline`` it links exists and holds the identifier the table shows beside it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.diff_matrix import between_markers
from course.lessons import GYM as LESSONS, GYM_SCRIPTS as SCRIPTS  # the 37 details are of the Gymnasium lessons

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN, END = "<!-- details-map:begin -->", "<!-- details-map:end -->"
CP, LL, PD, BO, MA, LS = SCRIPTS[:6]  # (the lessons in reading order: cartpole ... lstm_memory)


@dataclass(frozen=True)
class Absent:
    """The script leaves the detail out, for this reason."""

    why: str


NOT_PIXELS = Absent("n/a: no frames")
NOT_CONTINUOUS = Absent("n/a: discrete actions")


def everywhere(needle: str, **other: str | Absent) -> dict[str, str | Absent]:
    """The same needle in every script, except where `other` (keyed by the script's short name: cartpole,
    lunarlander, ...) says otherwise."""
    short = {lesson.name.split("_")[0]: lesson.script for lesson in LESSONS}
    if "cartpole" in other:  # the masking lesson is CartPole's diff: one env, CartPole's choices, unless told
        other = {"action": other["cartpole"], **other}
    return {script: needle for script in SCRIPTS} | {short[name]: value for name, value in other.items()}


def pixels(breakout: str | Absent, mario: str | Absent) -> dict[str, str | Absent]:
    """An Atari detail: n/a in the lessons without frames."""
    return {script: NOT_PIXELS for script in SCRIPTS} | {BO: breakout, MA: mario}


def continuous(pendulum: str, **other: str | Absent) -> dict[str, str | Absent]:
    """A continuous-action detail: n/a in the lessons with discrete actions, except where `other` (keyed as in
    everywhere()) says otherwise."""
    short = {lesson.name.split("_")[0]: lesson.script for lesson in LESSONS}
    return ({script: NOT_CONTINUOUS for script in SCRIPTS} | {PD: pendulum}
            | {short[name]: value for name, value in other.items()})


# (group, detail, {script: needle or Absent}); the detail's name follows [37]'s headings.
DETAILS: list[tuple[str, str, dict[str, str | Absent]]] = [
    ("core", "1. vectorized environments", everywhere(
        "def make_envs", cartpole=Absent("one env: the loop stays plain; LunarLander adds them"))),
    ("core", "2. orthogonal init, constant bias", everywhere("def layer_init")),
    ("core", "3. Adam epsilon 1e-5", everywhere("eps=1e-5")),
    ("core", "4. learning-rate annealing", everywhere('param_groups[0]["lr"] =')),
    ("core", "5. GAE", everywhere("def compute_gae")),
    ("core", "6. minibatch updates", everywhere(
        ".split(args.minibatch_size)", mario="def minibatches", lstm=".split(envs_per_minibatch)")),
    ("core", "7. advantage normalization", everywhere("if args.norm_adv:")),
    ("core", "8. clipped surrogate objective", everywhere("def clipped_surrogate_loss")),
    ("core", "9. value-loss clipping", everywhere(
        "def clipped_value_loss",
        cartpole=Absent("the paper's plain squared error; LunarLander adds clipping"),
        mario=Absent("the critic has its own loss and optimizer (Spinning Up): plain squared error"))),
    ("core", "10. overall loss and entropy bonus", everywhere(
        "- args.ent_coef * entropy_loss", mario="loss = pg_loss - args.ent_coef * entropy_loss")),
    ("core", "11. global gradient clipping", everywhere(
        "clip_grad_norm_(agent.parameters()", breakout="clip_grad_norm_(parameters",
        mario="clip_grad_norm_(parameters")),
    ("core", "12. debug variables (approx_kl, clipfrac, ...)", everywhere('"losses/clipfrac"')),
    ("core", "13. shared or separate networks", everywhere(
        "self.critic = nn.Sequential(", cartpole="self.trunk = nn.Sequential(",
        breakout="self.trunk = nn.Sequential(", mario="self.critic_cnn = cnn(",
        lstm="self.encoder = nn.Sequential(")),
    ("Atari", "1. no-op reset", pixels(
        "class NoopReset", Absent("sampled actions vary the episodes; uvipen's Mario setup has none"))),
    ("Atari", "2. max-and-skip 4 frames", pixels("class MaxAndSkip", "class MaxAndSkip")),
    ("Atari", "3. episodic life", pixels(
        "class EpisodicLife", Absent("an episode is already one life: death terminates it"))),
    ("Atari", "4. FIRE on reset", pixels("class FireReset", Absent("Mario needs no button to start"))),
    ("Atari", "5. grayscale 84 x 84 (WarpFrame)", pixels("class GrayscaleResize", "class GrayscaleResize")),
    ("Atari", "6. reward clipping", pixels(
        "class ClipReward", Absent("MarioReward shapes the reward and divides it by 10 instead"))),
    ("Atari", "7. frame stack of 4", pixels("class FrameStack", "class FrameStack")),
    ("Atari", "8. shared Nature CNN", pixels(
        "layer_init(nn.Conv2d(channels, 32, 8, stride=4))", Absent("the variant: two smaller CNNs, one per network"))),
    ("Atari", "9. pixels scaled to [0, 1]", pixels("/ 255.0", "/ 255.0")),
    ("continuous", "1. Gaussian policy", continuous("mean + logstd.exp() * torch.randn_like(mean)")),
    ("continuous", "2. state-independent log std", continuous("self.actor_logstd = nn.Parameter")),
    ("continuous", "3. independent action components", continuous("math.log(2 * math.pi)).sum(-1)")),
    ("continuous", "4. separate policy and value networks", continuous("self.actor_mean = nn.Sequential(")),
    ("continuous", "5. action clipped for the env, stored unclipped", continuous("gym.wrappers.ClipAction(env)")),
    ("continuous", "6. observation normalization", continuous("agent.obs_rms.update(", lstm="agent.obs_rms.update(")),
    ("continuous", "7. observation clipping", continuous(".clamp(-self.norm_clip, self.norm_clip)",
                                                         lstm=".clamp(-10.0, 10.0)")),
    ("continuous", "8. reward scaling", continuous("class RewardScaler")),
    ("continuous", "9. reward clipping", continuous("np.clip(rewards / std, -clip, clip)")),
    ("more", "early stopping on a KL target", everywhere(
        "approx_kl > args.target_kl:", cartpole=Absent("kept minimal; LunarLander adds it (off by default)"),
        mario="approx_kl > 1.5 * args.target_kl")),
    ("more", "adaptive KL penalty (paper eq. 8)", {
        script: Absent("taught once, in Pendulum") for script in SCRIPTS} | {PD: "def adapt_kl_beta"}),
    ("more", "truncation bootstrapping", everywhere(
        "final_values[step, bootstrap] = agent.get_value(",
        cartpole="rollout.final_values[step] = agent.get_value(")),
    ("more", "recurrent policy: LSTM state kept at the rollout's start, wiped at episode starts", {
        script: Absent("no memory: the policy reads the current observation") for script in SCRIPTS} | {
        BO: Absent("no memory but the stack of 4 frames"), MA: Absent("no memory but the stack of 4 frames"),
        LS: "rollout.initial_state = state"}),
    ("more", "invalid-action masking (logits -inf, entropy over valid actions)", {
        script: Absent("every action is valid in every state") for script in SCRIPTS} | {
        "ppo_action_masking.py": "masked_fill"}),
]


class NeedleNotFound(Exception):
    pass


def locate(script: str, needle: str, root: Path = ROOT) -> int:
    """The 1-based number of the first line of `script` that contains `needle`."""
    for number, line in enumerate((root / script).read_text().splitlines(), start=1):
        if needle in line:
            return number
    raise NeedleNotFound(f"{script}: no line contains {needle!r} (update tools/details_map.py's DETAILS)")


def cell(script: str, entry: str | Absent, root: Path = ROOT) -> str:
    if isinstance(entry, Absent):
        return entry.why
    line = locate(script, entry, root)
    return f"[{line}]({script}#L{line}) `{entry}`"


def symptom_links(found: list[dict]) -> dict[str, str]:
    """detail -> "; a recorded run of it shows: [section](guide#section)" for each detail a recorded broken
    run switched off (benchmarks/debugging.py) where course.diagnose names a symptom in that run: the first it names
    (the return's, else the diagnostic furthest outside its limits; the guide lists the others)."""
    from benchmarks import debugging

    links: dict[str, list[str]] = {}
    for (study, setting), anchors in debugging.study_symptoms().items():
        detail = next((e["detail"] for e in found if (e["study"], e["setting"]) == (study, setting)), "")
        if detail and anchors:
            links.setdefault(detail, []).append(
                f"[{anchors[0].replace('-', ' ')}](course/when-ppo-does-not-learn.md#{anchors[0]}) (`{setting}`)")
    return {detail: "; a recorded run of it shows: " + ", ".join(items) for detail, items in links.items()}


def table(root: Path = ROOT) -> str:
    """The map; its last column, what switching the detail off (or changing it) did in the ablation studies, is
    written from their committed effects (benchmarks/results/ablations/effects.csv, benchmarks.ablations)."""
    from benchmarks import ablations

    found = ablations.read_effects(root / "benchmarks" / "results" / "ablations")
    shown = symptom_links(found)
    lines = ["| group | detail | " + " | ".join(f"`{lesson.name}`" for lesson in LESSONS)
             + " | switched off or changed: effect on the study's leading score [95% CI], Holm-corrected verdict |",
             "|---|---|" + "---|" * (len(SCRIPTS) + 1)]
    for group, detail, entries in DETAILS:
        cells = [cell(script, entries[script], root) for script in SCRIPTS]
        cells.append(ablations.map_column(detail, group, found) + shown.get(detail, ""))
        lines.append(f"| {group} | {detail} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.details_map", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    group.add_argument("--check", action="store_true", help="exit 1 when README.md's table is out of date")
    args = parser.parse_args(argv)
    try:
        new_table = table()
    except NeedleNotFound as error:
        print(error, file=sys.stderr)
        return 1
    if not (args.write or args.check):
        print(new_table)
        return 0
    readme = README.read_text()
    updated = between_markers(readme, BEGIN, END, new_table)
    if updated is None:
        print(f"README.md has no {BEGIN} ... {END} markers to hold the table", file=sys.stderr)
        return 1
    if args.check:
        if updated != readme:
            print("README.md's implementation-details map is out of date: run python -m tools.details_map --write",
                  file=sys.stderr)
            return 1
        return 0
    README.write_text(updated)
    print(f"implementation-details map written to {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
