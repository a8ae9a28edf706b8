"""The --help texts: a flag shared by several scripts says the same words in each, unless the lesson changes what
it means there (DIFFERS says how); and --help never breaks a line mid-sentence. tyro keeps the line breaks of a
field docstring whose continuation lines are indented, so each script hands tyro its docstrings joined into one
line (one_line_help) and --help wraps them to the terminal's width."""

import ast

import pytest

from benchmarks.core import launch
from course.lessons import SCRIPTS, cli_fields
from conftest import ROOT

# Shared flags whose help may differ between scripts, and why. The rest must read the same everywhere: what a
# script's own default rests on (Table 5, [UV], ...) goes in a comment beside the field, not into --help.
DIFFERS = {
    "vf_clip_coef": "the language lesson always clips V (lm-human-preferences' cliprange_value), in whitened rewards",
    "kl_target": "Pendulum's d_targ is a step's KL under the paper's doubling rule; the language lesson's a whole "
                 "response's KL, steered by lm-human-preferences' proportional controller",
    "kl_coef": "beta weighs a per-token reward in PPO (adapted) and a per-token loss term in GRPO (fixed)",
    "env_id": "each script takes its own kind of env (and the help text is another issue's)",
    "total_timesteps": "one env in CartPole, N envs in the vector lessons, N envs on each rank at 4 frames a step in "
                       "the pixel lessons",
    "num_steps": "CartPole steps one env",
    "minibatch_size": "CartPole's batch is T steps of one env; Mario draws its minibatches step by step, not in epochs",
    "num_envs": "per rank in the torchrun scripts",
    "norm_adv": "the torchrun scripts normalize over each rank's own minibatch",
    "learning_rate": "Mario's is the policy's alone (and the help text is another issue's)",
    "anneal_lr": "Mario anneals two learning rates (and the help text is another issue's)",
    "clip_coef": "Pendulum's --objective kl and none clip nothing",
    "vf_coef": "with a shared trunk c1 weighs the value error in the shared features; with separate networks Adam "
               "cancels it but for the gradient clip",
    "max_grad_norm": "Mario clips each of its two networks' gradients apart",
    "target_kl": "Mario stops the policy's steps at 1.5 x target_kl, checked before each step (Spinning Up's rule)",
    "hidden_size": "the architecture is the lesson: a shared layer, two MLPs, a CNN's fully connected layer",
    "exp_name": "Mario names its runs by level",
    "seed": "the torchrun scripts seed each rank apart; the NES takes no seed",
    "torch_deterministic": "the pixel lessons set cuDNN's convolutions too",
    "capture_video": "what is recorded differs (training episodes, evaluations, whole games), and the help text is "
                     "another issue's",
    "resume": "what a checkpoint keeps differs (statistics, beta, ranks, two optimizers), and the help text is another "
              "issue's",
    "play": "the MLP lessons play the greedy policy; the pixel lessons sample, Breakout plays whole games and Mario "
            "reports how far he got",
    "episodes": "Breakout's --play episodes are whole games",
    "eval_every": "the MLP lessons evaluate the greedy policy; the pixel lessons sample",
    "eval_episodes": "Breakout's are whole games, Mario's log the x position and the flag too",
    "norm_obs": "the memory lesson clips at a fixed 10: it scales no rewards, so it has no --norm-clip",
    "precision": "one CNN trunk in Breakout, two CNNs in Mario (and the help text is another issue's)",
}


def help_texts(script: str) -> dict[str, str]:
    """{field: its docstring joined into one line} for the fields of the script's command line that are flags."""
    texts = {}
    for node, doc in cli_fields(ast.parse((ROOT / script).read_text())):
        if "Suppress" not in ast.unparse(node.annotation):
            texts[node.target.id] = " ".join(doc.value.value.split())
    return texts


def shared_fields() -> dict[str, dict[str, str]]:
    """{field: {script: help}} for every flag that more than one script has."""
    by_field: dict[str, dict[str, str]] = {}
    for script in SCRIPTS:
        for field, text in help_texts(script).items():
            by_field.setdefault(field, {})[script] = text
    return {field: texts for field, texts in by_field.items() if len(texts) > 1}


def test_a_shared_flag_says_the_same_in_every_script():
    differing = []
    for field, texts in shared_fields().items():
        if field not in DIFFERS and len(set(texts.values())) > 1:
            differing.append(f"--{field.replace('_', '-')}:\n" + "\n".join(
                f"    {script}: {text}" for script, text in texts.items()))
    assert not differing, ("these flags' help differs between scripts: say the same words, or list the field in "
                           "DIFFERS with the reason its meaning changes\n" + "\n".join(differing))


def test_every_listed_difference_is_still_one():
    """An entry of DIFFERS whose texts have come to agree is stale: remove it, so the test holds them equal."""
    shared = shared_fields()
    assert not DIFFERS.keys() - shared.keys(), f"not a flag of several scripts: {DIFFERS.keys() - shared.keys()}"
    stale = [field for field in DIFFERS if len(set(shared[field].values())) == 1]
    assert not stale, f"these flags' help is the same in every script now: remove them from DIFFERS: {stale}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_keeps_each_text_on_one_line(script, capsys, monkeypatch):
    """With a terminal wide enough, each flag's help is one line of --help: no line is broken where the source
    breaks its docstring. (The in-process tyro.cli of the script's own main(), as `python <script> --help`.)"""
    module = launch.import_lesson(script)
    monkeypatch.setenv("COLUMNS", "1000")
    assert launch.run_main(module, ["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    broken = [field for field, text in help_texts(script).items() if not any(text in line for line in lines)]
    assert not broken, f"{script} --help breaks the help of {broken} over several lines"


def test_the_check_fails_without_one_line_help(monkeypatch, capsys):
    """The check above catches the break: with tyro reading the docstrings as they are, a multi-line one comes out
    on several lines."""
    import ppo_cartpole

    monkeypatch.setattr(ppo_cartpole, "one_line_help", lambda cls: cls)
    for field in ppo_cartpole.Args.__dataclass_fields__.values():  # undo what an earlier main() handed tyro
        monkeypatch.setattr(field, "metadata", {k: v for k, v in field.metadata.items() if k != "help"})
    monkeypatch.setenv("COLUMNS", "1000")
    assert launch.run_main(ppo_cartpole, ["--help"]) == 0
    out = capsys.readouterr().out
    assert help_texts("ppo_cartpole.py")["gae_lambda"] not in out
