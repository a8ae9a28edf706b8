"""The training loop's state, tested as tightly as its formulas: for every script, a run stopped by Ctrl-C at an
update and resumed ends with the same weights, optimizer state, random states and annealing, and logged the
same scalars, as the run that never stopped; and (every script that evaluates during training) a run that
evaluates after every update trains exactly as one that never evaluates. Exact, not within a tolerance: the
envs' episodes all end where the rollouts end, so a resumed run sees exactly the data the uninterrupted run
sees (tests/scripted_runs.py says how). Also: Breakout's same seed gives the same run, Pendulum's beta is halved
and doubled through train() and comes back on resume."""

from pathlib import Path

import pytest
import torch

import scripted_runs
from benchmarks.core.runs import read_scalars  # (how every record in benchmarks/ reads a run folder)
from conftest import scalars as tensorboard_scalars  # (TensorBoard's own reader, every event kept)
from fingerprint import CONFIGS as TINY, EVALUATING

# 3 updates of fingerprint.py's tiny configurations (12 samples each, on the counting envs).
UPDATES, STOP_AFTER = 3, 1
# What these runs add to them. Pendulum: the KL penalty with a target no update can stay under: beta doubles
# after every update, so the resumed run must take it from the checkpoint; value clipping on (off by default
# here) with a range small enough to act. (The fingerprint's Pendulum runs set these in their variants instead.)
WHOLE_RUN_FLAGS = {"ppo_pendulum_continuous": ["--objective", "kl", "--kl-target", "1e-9", "--clip-vloss",
                                               "--vf-clip-coef", "0.0002"]}
CONFIGS = {module: [*argv, *WHOLE_RUN_FLAGS.get(module, [])] for module, argv in TINY.items()}
# Breakout's same-seed runs, on the real game: one update of 2 envs x 32 steps. Runs "a" and "c" (another seed) in
# one process, "b" (a's seed) in another.
BREAKOUT_GAME = ["--total-timesteps", "64", "--num-envs", "2", "--num-steps", "32", "--minibatch-size", "32",
                 "--update-epochs", "1", "--hidden-size", "32", "--precision", "fp32", "--no-cuda",
                 "--vectorization-mode", "sync", "--eval-every", "0"]
GAMES = {1: [("a", "3"), ("c", "4")], 2: [("b", "3")]}


def argv(module, name):
    return [*CONFIGS[module], "--total-timesteps", str(UPDATES * 12), "--exp-name", name, "--checkpoint-every", "0",
            *(["--eval-every", "0"] if module in EVALUATING else [])]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """runs(module, part): the driven runs of `module`, made once per module. Part 1, in one process: "straight"
    (never stopped), "stopped" (Ctrl-C in update STOP_AFTER, or in the next one for the pixel scripts, whose
    Stopper then saves update STOP_AFTER) and, where the script evaluates, "evaluated" (after every update).
    Part 2, in a fresh process: "resumed" from the stopped run's checkpoint. Breakout's parts also hold its
    same-seed runs on the real game (GAMES)."""
    made = {}

    def get(module, part):
        if (module, part) in made:
            return made[module, part]
        if part == 1:
            folder = tmp_path_factory.mktemp(module)
            stop_update = STOP_AFTER + (module in scripted_runs.STOPPER_SCRIPTS)
            variants = [{"name": "straight", "argv": argv(module, "straight"), "stop_update": None},
                        {"name": "stopped", "argv": argv(module, "stopped"), "stop_update": stop_update}]
            if module in EVALUATING:
                evaluated = [*with_flag(argv(module, "evaluated"), "--eval-every", "1"), "--eval-episodes", "2"]
                variants.append({"name": "evaluated", "argv": evaluated, "stop_update": None})
            variants += games(module, 1) + betas(module, 1)
            made[module, 1] = scripted_runs.run_variants(module, variants, folder), folder
        else:
            results, folder = get(module, 1)
            checkpoint = f"{results['stopped']['run_dir']}/checkpoint.pt"
            stopped = torch.load(checkpoint, weights_only=True)  # (before the resumed run overwrites it)
            resumed = {"name": "resumed", "argv": ["--resume", checkpoint], "stop_update": None}
            halved = torch.load(f"{results['halved']['run_dir']}/checkpoint.pt", weights_only=True) \
                if module == "ppo_pendulum_continuous" else None
            later = games(module, 2) + betas(module, 2, results)
            made[module, 2] = stopped, scripted_runs.run_variants(module, [resumed, *later], folder), halved
        return made[module, part]

    return get


def games(module, part):
    if module != "ppo_breakout_atari":
        return []
    return [{"name": f"game_{name}", "argv": [*BREAKOUT_GAME, "--seed", seed, "--exp-name", f"game_{name}"],
             "stop_update": None, "real_env": True} for name, seed in GAMES[part]]


def with_flag(argv, flag, value):
    """`argv` with `flag`'s value replaced."""
    i = argv.index(flag)
    return [*argv[:i + 1], value, *argv[i + 2:]]


def betas(module, part, results=None):
    """Pendulum's beta runs: part 1, "halved": 2 updates with a KL target no update reaches (beta halved after
    each); part 2, "doubled": resumed from it for 2 more, with a target every update overshoots (doubled)."""
    if module != "ppo_pendulum_continuous":
        return []
    if part == 1:
        halved = with_flag(with_flag(argv(module, "halved"), "--kl-target", "1e6"), "--total-timesteps", "24")
        return [{"name": "halved", "argv": halved, "stop_update": None}]
    checkpoint = f"{results['halved']['run_dir']}/checkpoint.pt"
    return [{"name": "doubled", "stop_update": None,
             "argv": ["--resume", checkpoint, "--total-timesteps", "48", "--kl-target", "1e-12"]}]


def final_checkpoint(result):
    ckpt = torch.load(f"{result['run_dir']}/checkpoint.pt", weights_only=True)
    del ckpt["args"]  # (a resumed run's args name its --resume; all else must match)
    return ckpt


@pytest.mark.parametrize("module", list(CONFIGS))
def test_a_stopped_and_resumed_run_ends_as_the_run_that_never_stopped(module, runs):
    results, _ = runs(module, 1)
    stopped_checkpoint, resumed, _ = runs(module, 2)
    straight, stopped, resumed = results["straight"], results["stopped"], resumed["resumed"]
    assert straight["exit"] == 0 and stopped["exit"] == 130 and resumed["exit"] == 0
    # Ctrl-C came where it was meant to: the checkpoint holds update STOP_AFTER, not the end of the run.
    assert stopped_checkpoint["iteration"] == STOP_AFTER and stopped_checkpoint["global_step"] == STOP_AFTER * 12
    assert resumed["run_dir"] == stopped["run_dir"]

    # Everything the checkpoint holds: weights (and Pendulum's normalization statistics), optimizer state,
    # every random generator, step count, annealing schedule (and Pendulum's reward statistics and beta).
    expected, got = final_checkpoint(straight), final_checkpoint(resumed)
    assert expected["iteration"] == UPDATES
    assert not scripted_runs.differences(expected, got), scripted_runs.differences(expected, got)[:10]

    # Every scalar logged (losses, KL, clip fractions, learning rate, beta, episodes), update for update.
    logged = scripted_runs.scalars(straight["log"])
    assert {("losses/value_loss", u * 12) for u in range(1, UPDATES + 1)} <= logged.keys()
    assert any(tag == "charts/episodic_return" for tag, _ in logged)
    if module in ("ppo_lunarlander_vec", "ppo_pendulum_continuous", "ppo_breakout_atari"):  # the value clip acted
        assert any(logged["losses/vf_clipfrac", u * 12][0] > 0 for u in range(1, UPDATES + 1))
    problems = scripted_runs.scalar_differences(logged, scripted_runs.scalars(stopped["log"], resumed["log"]))
    assert not problems, problems[:10]


@pytest.mark.parametrize("module", list(CONFIGS))
def test_a_resumed_runs_folder_reads_as_the_run_that_never_stopped(module, runs):
    """The stopped and resumed run's folder, two events files, read as TensorBoard reads it (the resumed run's
    writer has it drop what the stopped one logged past the checkpoint) and as benchmarks.core.runs.read_scalars
    reads it (which finds the checkpoint's step in the logs): both hold what the run that never stopped logged."""
    results, _ = runs(module, 1)
    runs(module, 2)  # (the resumed run, into the stopped run's folder)
    straight, stopped = Path(results["straight"]["run_dir"]), Path(results["stopped"]["run_dir"])
    files = sorted(stopped.glob("events.out.tfevents.*"))
    assert len(files) == 2

    def without_sps(points: dict) -> dict:  # (charts/SPS counts wall time: it differs run to run)
        return {tag: values for tag, values in points.items() if tag != "charts/SPS"}

    def read_by_benchmarks(run_dir) -> dict:  # read_scalars' events as {tag: [(step, value), ...]}
        return without_sps({tag: [(e.step, e.value) for e in events]
                            for tag, events in read_scalars(run_dir)[0].items()})

    expected = read_by_benchmarks(straight)
    if module in scripted_runs.STOPPER_SCRIPTS:  # the stopped process did log past its checkpoint (step 12)
        assert max(step for step, _ in tensorboard_scalars(files[0])["charts/episodic_return"]) > 12
    assert without_sps(tensorboard_scalars(stopped)) == expected
    assert read_by_benchmarks(stopped) == expected


@pytest.mark.parametrize("module", EVALUATING)
def test_evaluating_leaves_training_unchanged(module, runs):
    results, _ = runs(module, 1)
    straight, evaluated = results["straight"], results["evaluated"]
    assert straight["exit"] == 0 and evaluated["exit"] == 0
    logged = scripted_runs.scalars(evaluated["log"])
    assert [step for tag, step in logged if tag == "eval/mean_return"] == [u * 12 for u in range(1, UPDATES + 1)]
    trained = {key: values for key, values in logged.items() if not key[0].startswith("eval/")}
    problems = scripted_runs.scalar_differences(scripted_runs.scalars(straight["log"]), trained)
    assert not problems, problems[:10]
    expected, got = final_checkpoint(straight), final_checkpoint(evaluated)
    assert not scripted_runs.differences(expected, got), scripted_runs.differences(expected, got)[:10]


# ---------------------------------------------------------------------------------------------------------
# Breakout: the same seed gives the same run, on the real game
# ---------------------------------------------------------------------------------------------------------
def test_breakout_same_seed_same_run(runs):
    (part1, _), (_, part2, _) = runs("ppo_breakout_atari", 1), runs("ppo_breakout_atari", 2)
    a, b, c = part1["game_a"], part2["game_b"], part1["game_c"]
    assert a["exit"] == b["exit"] == c["exit"] == 0
    # Two processes, one seed: the same games, actions and updates.
    problems = scripted_runs.scalar_differences(scripted_runs.scalars(a["log"]), scripted_runs.scalars(b["log"]))
    assert not problems, problems[:10]
    assert not scripted_runs.differences(final_checkpoint(a), final_checkpoint(b))
    # Another seed: another run.
    a_logged, c_logged = scripted_runs.scalars(a["log"]), scripted_runs.scalars(c["log"])
    assert a_logged["losses/value_loss", 64] != c_logged["losses/value_loss", 64], "the seed changes nothing?"
    assert scripted_runs.differences(final_checkpoint(a)["agent"], final_checkpoint(c)["agent"])


# ---------------------------------------------------------------------------------------------------------
# Pendulum: the adaptive beta moves through train(), and a resumed run goes on with the beta it saved
# ---------------------------------------------------------------------------------------------------------
def test_pendulum_beta_is_halved_and_doubled_by_train_and_restored_on_resume(runs):
    (part1, _), (_, part2, saved) = runs("ppo_pendulum_continuous", 1), runs("ppo_pendulum_continuous", 2)
    halved, doubled = part1["halved"], part2["doubled"]
    assert halved["exit"] == doubled["exit"] == 0 and doubled["run_dir"] == halved["run_dir"]
    logged = scripted_runs.scalars(halved["log"])
    # The beta each update was penalized with, and the KL d that moved it (d < 1e6 / 1.5: halved).
    assert [logged["charts/kl_beta", step] for step in (12, 24)] == [[1.0], [0.5]]
    assert all(0 < logged["losses/kl", step][0] < 1e6 / 1.5 for step in (12, 24))
    assert saved["kl_beta"] == 0.25  # for the next update
    # Resumed: it goes on from the saved 0.25 (not --kl-beta-init's 1, nor the last update's 0.5), and every
    # update overshoots a target of 1e-12: doubled after each.
    logged = scripted_runs.scalars(doubled["log"])
    assert [logged["charts/kl_beta", step] for step in (36, 48)] == [[0.25], [0.5]]
    assert all(logged["losses/kl", step][0] > 1.5e-12 for step in (36, 48))
    assert final_checkpoint(doubled)["kl_beta"] == 1.0
