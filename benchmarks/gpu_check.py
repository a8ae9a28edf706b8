"""The GPU check: every script's CUDA path, run for a few updates, with the checks a GPU run needs.

For the CNN scripts (Breakout, Mario), in fp32 and in bf16:
- ratio: the policy ratio r_t at the start of an update is 1. The rollout computes log pi_old in batches of N
  envs under inference mode; the update recomputes it in minibatches of M with gradients on. Where the two
  shapes make the device pick different kernels (cuDNN, bf16 rounding), r_t starts off 1 and the clip acts on
  noise. Checked at the scripts' real sizes (Breakout: 8 envs x 128 steps, minibatches of 256; Mario: 8 x 512,
  256).
- train: a few updates of the script itself on the device, with its SPS (charts/SPS, the last update's).
- same seed: a second run with the same seed logs the same losses (deterministic mode on CUDA: cuBLAS's
  workspace, cuDNN's deterministic convolutions).
- evaluation: a run that evaluates after every few updates logs the same losses as one that does not
  (evaluate() samples on forks of the CPU and CUDA generators).
- torchrun: one rank per GPU through torchrun (nccl on CUDA, gloo on the CPU).
The MLP scripts run a few updates with --cuda (CartPole, LunarLander, Pendulum with both objectives).

Usage, from the repository root:
    python -m benchmarks.gpu_check                          # on CUDA: a few minutes on one GPU
    python -m benchmarks.gpu_check --device cpu --quick     # the same checks, tiny, on the CPU (the suite runs it)

Mario needs gym-super-mario-bros. Where it cannot be installed (nes-py 9.x ships wheels for Python 3.13 only,
and nes-py 8.x breaks under numpy 2), `--fake-nes` (automatic when the import fails) puts a stand-in NES below
the script's own wrappers: random 240 x 256 frames and the info keys the script reads. Everything on the device
(the networks, the update, evaluation, checkpoints) is then still the script's own.

Exit status 1 if any check fails; the table says which.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
import types
from pathlib import Path

from benchmarks.core import launch, runs

CNN = {"breakout": "ppo_breakout_atari", "mario": "ppo_mario_cnn"}


# ---------------------------------------------------------------------------------------------------------
# A stand-in NES, for machines where gym-super-mario-bros cannot be installed
# ---------------------------------------------------------------------------------------------------------
def install_fake_nes() -> None:
    """Put modules named gym_super_mario_bros and nes_py into sys.modules: a gymnasium env with random NES-sized
    frames, x_pos creeping right, an episode ending after 100 to 300 frames, and JoypadSpace's action subsets."""
    import gymnasium as gym
    import numpy as np

    class FakeNES(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (240, 256, 3), np.uint8)
        action_space = gym.spaces.Discrete(256)

        def __init__(self, lost_levels=False, target=None):
            self.render_mode = "rgb_array"

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.frame, self.x, self.score = 0, 40, 0
            self.length = int(self.np_random.integers(100, 300))
            return self._screen(), self._info()

        def step(self, action):
            self.frame += 1
            self.x += int(self.np_random.integers(0, 3))
            self.score += 100 * int(self.np_random.random() < 0.01)
            return self._screen(), float(self.np_random.integers(-1, 3)), self.frame >= self.length, False, \
                self._info()

        def _screen(self):
            return self.np_random.integers(0, 256, (240, 256, 3), dtype=np.uint8)

        def _info(self):
            return {"score": self.score, "flag_get": False, "x_pos": self.x, "coins": 0, "life": 2, "time": 400,
                    "world": 1, "stage": 1, "status": "small", "y_pos": 79}

    class JoypadSpace(gym.Wrapper):
        def __init__(self, env, actions):
            super().__init__(env)
            self.action_space = gym.spaces.Discrete(len(actions))

    mario = types.ModuleType("gym_super_mario_bros")
    mario.SuperMarioBrosEnv = FakeNES
    actions = types.ModuleType("gym_super_mario_bros.actions")
    actions.RIGHT_ONLY = [["NOOP"], ["right"], ["right", "A"], ["right", "B"], ["right", "A", "B"]]
    actions.SIMPLE_MOVEMENT = actions.RIGHT_ONLY + [["A"], ["left"]]
    actions.COMPLEX_MOVEMENT = actions.SIMPLE_MOVEMENT + [["left", "A"], ["left", "B"], ["left", "A", "B"],
                                                          ["down"], ["up"]]
    nes_py = types.ModuleType("nes_py")
    wrappers = types.ModuleType("nes_py.wrappers")
    wrappers.JoypadSpace = JoypadSpace
    sys.modules.update({"gym_super_mario_bros": mario, "gym_super_mario_bros.actions": actions,
                        "nes_py": nes_py, "nes_py.wrappers": wrappers})


def import_script(module: str, fake_nes: bool):
    if module == "ppo_mario_cnn" and fake_nes:  # (main decides fake_nes once, before any check imports)
        install_fake_nes()
    return launch.import_lesson(module)


# ---------------------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------------------
def ratio_at_start(name: str, precision: str, device: str, num_envs: int, num_steps: int, minibatch: int,
                   fake_nes: bool) -> tuple[float, float]:
    """max |r_t - 1| and max |V_update - V_rollout| over one rollout of random frames, acted on as
    collect_rollout acts (N at a time, inference mode) and scored as the update scores (minibatches, grads)."""
    import gymnasium as gym
    import numpy as np
    import torch

    ppo = import_script(CNN[name], fake_nes)
    torch.use_deterministic_algorithms(True)  # what train() sets, with the script's own cuDNN flags
    if device == "cuda":
        ppo.set_cudnn_flags(ppo.Args())
    torch.manual_seed(0)
    spaces = types.SimpleNamespace(observation_space=gym.spaces.Box(0, 255, (4, 84, 84), np.uint8),
                                   action_space=gym.spaces.Discrete(7))
    agent = ppo.Agent(spaces, hidden_size=512, bf16=precision == "bf16").to(device)
    torch.nn.init.orthogonal_(agent.actor.weight, 1.0)  # a policy head that prefers some actions
    obs = torch.randint(0, 256, (num_steps, num_envs, 4, 84, 84), dtype=torch.uint8)
    actions, logprobs, values = [], [], []
    for t in range(num_steps):
        with torch.inference_mode():
            action, logprob, _, value = agent.get_action_and_value(obs[t].to(device))
        actions.append(action.cpu()), logprobs.append(logprob.cpu()), values.append(value.cpu())
    b_obs = obs.flatten(0, 1).to(device)
    b_actions, b_logprobs, b_values = (torch.stack(x).flatten(0, 1).to(device) for x in (actions, logprobs, values))
    worst_ratio = worst_value = 0.0
    for mb in torch.randperm(num_envs * num_steps, device=device).split(minibatch):
        _, newlogprob, _, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
        worst_ratio = max(worst_ratio, ((newlogprob - b_logprobs[mb]).exp() - 1).abs().max().item())
        worst_value = max(worst_value, (newvalue - b_values[mb]).abs().max().item())
    return worst_ratio, worst_value


def run(script: str, argv: list[str], scratch: str, fake_nes: bool, torchrun: bool = False) -> tuple[dict, float]:
    """Train `script` with `argv` in a new folder under `scratch` (through this tool's --as-script, so that the
    stand-in NES can go in), under torchrun on one rank if asked; return its scalars {tag: [values]} and the wall
    seconds."""
    cwd = Path(tempfile.mkdtemp(dir=scratch))
    command = launch.python_command("-m", "benchmarks.gpu_check", "--as-script", script,
                                    *(["--fake-nes"] if fake_nes else []), "--", *argv, torchrun=int(torchrun))
    start = time.time()
    result = launch.run(command, cwd, timeout=900)
    seconds = time.time() - start
    if result.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(argv)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    (run_dir,) = runs.logged_folders(cwd / "runs")
    scalars, _ = runs.read_events(run_dir)
    return {tag: [e.value for e in events] for tag, events in scalars.items()}, seconds


LOSSES = ("losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl")


def same_losses(a: dict, b: dict) -> bool:
    return all(a.get(tag) == b.get(tag) for tag in LOSSES) and any(a.get(tag) for tag in LOSSES)


# The training runs' arguments, (full: a few updates each, --quick: tiny, to check the checks on the CPU)
ARGS = {
    "breakout": ("--total-timesteps 8192",  # 8 updates of 8 envs x 128 steps
                 "--total-timesteps 256 --num-envs 2 --num-steps 64 --minibatch-size 64 --update-epochs 1 "
                 "--vectorization-mode sync"),
    "mario": ("--total-timesteps 8192 --num-steps 256",  # 4 updates of 8 envs x 256 steps
              "--total-timesteps 128 --num-envs 2 --num-steps 32 --minibatch-size 32 --train-pi-iters 2 "
              "--train-v-iters 2"),
    "eval": ("--eval-every 2 --eval-episodes 1", "--eval-every 1 --eval-episodes 1"),
    "ppo_cartpole.py": ("--total-timesteps 4096", "--total-timesteps 256 --num-steps 128 --minibatch-size 64"),
    "ppo_lunarlander_vec.py": ("--total-timesteps 16384",
                               "--total-timesteps 512 --num-envs 2 --num-steps 128 --minibatch-size 128"),
    "ppo_pendulum_continuous.py": ("--total-timesteps 16384", "--total-timesteps 512 --num-envs 2 --num-steps 128"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the checks, not the device")
    parser.add_argument("--fake-nes", action="store_true",
                        help="Mario on the stand-in NES even where the real one installs")
    parser.add_argument("--only", nargs="+", choices=["ratio", "breakout", "mario", "mlp"],
                        help="run these parts alone (default: all)")
    parser.add_argument("--as-script", metavar="SCRIPT", help=argparse.SUPPRESS)  # internal: run SCRIPT's main()
    parser.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args()

    if options.as_script:  # one training run, as `python SCRIPT argv` would, with the stand-in NES if asked
        ppo = import_script(options.as_script[: -len(".py")], options.fake_nes)
        return launch.run_main(ppo, options.argv)

    import torch

    if options.device == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device here (use --device cpu for the CPU run of the same checks)", file=sys.stderr)
        return 2
    cuda = options.device == "cuda"
    # Decided once, here: once a check has put the stand-in into sys.modules, importing gym_super_mario_bros
    # succeeds, and a later test for the real one would wrongly find it (the third H200 run's Mario failures).
    try:
        import gym_super_mario_bros  # noqa: F401
    except ImportError:
        options.fake_nes = True
    if cuda:
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"bf16 native: {torch.cuda.is_bf16_supported(including_emulation=False)}")
    results = []  # ok or not, check by check

    def report(check: str, ok: bool, detail: str) -> None:
        results.append(ok)
        print(f"{check:42s} {'ok' if ok else 'FAIL':4s} {detail}", flush=True)

    # --- the ratio at the start of an update ---------------------------------------------------------------
    sizes = {name: (2, 8, 8) for name in CNN} if options.quick else {"breakout": (8, 128, 256), "mario": (8, 512, 256)}
    parts = set(options.only or ["ratio", "breakout", "mario", "mlp"])
    for name in CNN if "ratio" in parts else []:
        for precision in ("fp32", "bf16"):
            n, t, m = sizes[name]
            ratio, value = ratio_at_start(name, precision, options.device, n, t, m, options.fake_nes)
            bound = 1e-4 if precision == "fp32" else 1e-3
            report(f"{name} {precision}: ratio at the start of an update", ratio < bound,
                   f"max |r - 1| = {ratio:.1e} (bound {bound:.0e}), max |V - V_old| = {value:.1e} "
                   f"({n} envs x {t} steps, minibatches of {m})")

    # --- training runs ---------------------------------------------------------------------------------------
    args = {key: value[options.quick].split() for key, value in ARGS.items()}
    common = ["--cuda" if cuda else "--no-cuda", "--seed", "1", "--checkpoint-every", "0"]

    @contextlib.contextmanager
    def failing_as(check: str):
        """A training run that fails in the block is reported as `check` failing, and the block ends there."""
        try:
            yield
        except RuntimeError as e:
            report(check, False, str(e).splitlines()[0])
            print(e, file=sys.stderr)

    with tempfile.TemporaryDirectory() as scratch:
        for name in [name for name in CNN if name in parts]:
            script = CNN[name] + ".py"
            base = [*args[name], *common]
            if name == "mario" and options.fake_nes:
                # (async workers start by importing the script afresh, where the stand-in NES is not)
                base += ["--vectorization-mode", "sync"]
            # (--quick trains in fp32 only: a CPU without native bf16 emulates it, many times slower)
            for precision in ("fp32",) if options.quick else ("fp32", "bf16"):
                argv = [*base, "--precision", precision, "--eval-every", "0"]
                with failing_as(f"{name} {precision}: train"):
                    first, seconds = run(script, argv, scratch, options.fake_nes)
                    report(f"{name} {precision}: train", True,
                           f"SPS {first['charts/SPS'][-1]:.0f} (last update), {seconds:.0f} s with start-up")
                    second, _ = run(script, argv, scratch, options.fake_nes)
                    report(f"{name} {precision}: same seed, same losses", same_losses(first, second),
                           f"{len(first['losses/value_loss'])} updates compared")
                    if precision == "fp32":
                        evaluated, _ = run(script, [*base, "--precision", precision, *args["eval"]], scratch,
                                           options.fake_nes)
                        report(f"{name} {precision}: evaluation leaves training alone",
                               same_losses(first, evaluated) and "eval/mean_return" in evaluated,
                               f"{len(evaluated.get('eval/mean_return', []))} evaluations")
            if options.quick:  # (the suite runs torchrun with 2 CPU ranks in tests/test_breakout.py, test_mario.py)
                continue
            with failing_as(f"{name}: torchrun, 1 rank"):
                _, seconds = run(script, [*base, "--eval-every", "0"], scratch, options.fake_nes, torchrun=True)
                report(f"{name}: torchrun, 1 rank ({'nccl' if cuda else 'gloo'})", True, f"{seconds:.0f} s")

        mlp_runs = [("ppo_cartpole.py", []), ("ppo_lunarlander_vec.py", args["eval"]),
                    *(("ppo_pendulum_continuous.py", ["--objective", objective]) for objective in ("clip", "kl"))]
        for script, extra in mlp_runs if "mlp" in parts else []:
            label = f"{script[:-3]} {' '.join(extra[:2])}".strip()
            with failing_as(f"{label}: train"):
                logged, seconds = run(script, [*args[script], *common, *extra], scratch, options.fake_nes)
                report(f"{label}: train", True, f"SPS {logged['charts/SPS'][-1]:.0f}, {seconds:.0f} s with start-up")

    print(f"\ngpu_check: {results.count(True)} checks ok, {results.count(False)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
