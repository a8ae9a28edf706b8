"""Shared test helpers: a tiny env with known episode ends (CountingTest-v0) and a stub agent for checking
rollouts by hand; running a script from its command line in a scratch folder (and pressing Ctrl-C in it), or its
main() in this process; checking a usage error and the refusal of unreadable checkpoints; finding the run folders
a run made and reading the TensorBoard scalars it wrote. Lessons run through benchmarks.core.launch, run folders
are found and read through benchmarks.core.runs, as the tools in benchmarks/ do.

`python -m pytest` from the repository root puts the root on sys.path (so `import ppo_cartpole` and `import
benchmarks` work); pytest puts tests/ there (so `from conftest import ...` and `import scripted_runs` work)."""

import os
import random
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn as nn

from benchmarks.core import launch, runs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# A new run's annealing schedule (see `resumed_schedule` in the scripts), for checkpoints written by hand.
SCHEDULE = {"scale": 1.0, "num_iterations": 1}
# The TensorBoard tags every script logs, named as CleanRL names them so runs compare with published ones.
CLEANRL_TAGS = {
    "charts/episodic_return", "charts/episodic_length", "charts/learning_rate", "charts/SPS",
    "losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl", "losses/old_approx_kl",
    "losses/clipfrac", "losses/explained_variance",
}


# ---------------------------------------------------------------------------------------------------------
# A tiny env with known episode ends and a stub agent, to check a script's rollout bookkeeping by hand
# ---------------------------------------------------------------------------------------------------------
class CountingEnv(gym.Env):
    """Observation [k, 0, 0]: k counts the steps taken in the current episode (0 after reset). Reward 1 per
    step, whatever the action. An env first reset with an even seed TERMINATES after 3 steps; one reset with
    an odd seed is TRUNCATED after 2 (as a time limit would); one reset with a seed of 1000 or more both
    TERMINATES and is TRUNCATED after 2 steps, as gymnasium's TimeLimit reports an episode that terminates on
    its limit step. In the vector env, env i is seeded seed + i. Each step's info carries x_pos = k and
    flag_get = False, the keys the Mario script reads at an episode's end."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, render_mode=None):
        self.render_mode = render_mode

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.both = seed >= 1000
            self.terminates = seed % 2 == 0 and not self.both
        self.k = 0
        return self._obs(), {}

    def step(self, action):
        self.k += 1
        terminated = (self.terminates and self.k == 3) or (self.both and self.k == 2)
        truncated = not self.terminates and self.k == 2
        return self._obs(), 1.0, terminated, truncated, {"x_pos": self.k, "flag_get": False}

    def _obs(self):
        return np.array([self.k, 0.0, 0.0], dtype=np.float32)


# For gym.make, and so for the scripts' make_env. An async vector env's workers start from a forkserver, not as
# forks of the test process, so they never ran this line: give them "conftest:CountingTest-v0", which gym.make
# reads as "import conftest (registering the id), then make CountingTest-v0".
gym.register("CountingTest-v0", entry_point=CountingEnv)


class CountingContinuousEnv(CountingEnv):
    """CountingEnv with one continuous action in [-1, 1], for ppo_pendulum_continuous.py: the same observations
    and episode ends; reward 1 - |a| / 2, so what the policy samples matters."""

    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def step(self, action):
        obs, _, terminated, truncated, info = super().step(action)
        return obs, 1.0 - 0.5 * abs(float(action[0])), terminated, truncated, info


gym.register("CountingContinuousTest-v0", entry_point=CountingContinuousEnv)


class StubAgent(nn.Module):
    """V(obs) = k, the step counter; always action 1 with log-prob -0.5. Enough to check the bookkeeping."""

    def __init__(self):
        super().__init__()
        self.unused = nn.Parameter(torch.zeros(1))  # collect_rollout reads the device from the parameters

    def get_value(self, x):
        return x[..., 0]

    def get_action_and_value(self, x, action=None, greedy=False):
        shape = x.shape[:-1]  # () for one observation, (N,) for a batch
        return torch.ones(shape, dtype=torch.int64), torch.full(shape, -0.5), torch.zeros(shape), self.get_value(x)


# ---------------------------------------------------------------------------------------------------------
# Running the scripts
# ---------------------------------------------------------------------------------------------------------
class MemoryStubAgent(StubAgent):
    """StubAgent with ppo_lstm_memory.py's interface: each call takes the LSTM state and the episode-start flags
    over [T, N] steps and hands the state back (untouched: the bookkeeping is what is checked)."""

    def initial_state(self, num_envs):
        return torch.zeros(num_envs, 1), torch.zeros(num_envs, 1)

    def get_value(self, x, state=None, starts=None):
        return x[..., 0]

    def get_action_and_value(self, x, state=None, starts=None, action=None, greedy=False):
        return (*super().get_action_and_value(x, action, greedy), state)


def stub_rollout(ppo, envs, next_obs, rollout):
    """ppo.collect_rollout with the stub agent its interface takes: (next_obs, last_value, episodes)."""
    if ppo.__name__ != "ppo_lstm_memory":
        return ppo.collect_rollout(envs, StubAgent(), next_obs, rollout)
    agent, n = MemoryStubAgent(), len(next_obs)
    (next_obs, _, _), last_value, episodes = ppo.collect_rollout(
        envs, agent, (next_obs, np.ones(n, np.float32), agent.initial_state(n)), rollout)
    return next_obs, last_value, episodes


def run_script(script: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python <script> <args>` as a user would, in `cwd` (its runs/ folder lands there)."""
    return launch.run(launch.lesson_command(script, list(args)), cwd, timeout=timeout)


def ctrl_c_saves_a_checkpoint(script: str, *args: str, cwd: Path, steps_per_update: int, total_timesteps: int,
                              message: str = "Ctrl-C: saving a checkpoint after this update", ranks: int = 0):
    """Start `python <script> <args>` in a session of its own, wait until its progress bar (stderr) shows a
    finished update (the training loop runs and its Ctrl-C handler is set), then press Ctrl-C the way a
    terminal does: SIGINT to the whole process group, env worker processes included. Check the script
    finished its update, saved a checkpoint, said where, and exited 130 without a traceback; return the
    checkpoint. ranks > 0: the same under torchrun with that many CPU ranks (torchrun forwards the Ctrl-C to its
    workers, which also get it from the terminal, and kills them 30 s later)."""
    process = subprocess.Popen(  # (bytes, not launch.process's text: the progress bar is read as it comes)
        launch.lesson_command(script, list(args), torchrun=ranks), cwd=cwd, env=launch.environment(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    progress, deadline = b"", time.time() + 120
    while b"SPS" not in progress and time.time() < deadline and process.poll() is None:
        if select.select([process.stderr], [], [], 1.0)[0]:
            progress += os.read(process.stderr.fileno(), 65536)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    stdout, stderr = stdout.decode(), (progress + stderr).decode()
    if not ranks:
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr, stderr
    assert message in stdout, stdout + stderr
    (run_dir,) = run_dirs(cwd)
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert 0 < ckpt["global_step"] < total_timesteps and ckpt["global_step"] % steps_per_update == 0
    assert f"checkpoint: runs/{run_dir.name}/checkpoint.pt (step {ckpt['global_step']})" in stdout
    return ckpt


def two_torchrun_ranks(module: str, argv: list[str], cwd: Path, stderr: Optional[list] = None) -> tuple[dict, dict]:
    """Train `module`.py under torchrun with 2 CPU ranks and `argv`; return each rank's agent weights as
    {"initial": at construction, "final": after training} and the torch random states it restored on --resume
    ("restored"), saved by tests/torchrun_driver.py. The run's stderr (rank 0's progress bar) is appended to
    `stderr` if given."""
    result = launch.run(launch.python_command(str(HERE / "torchrun_driver.py"), module, *argv, torchrun=2), cwd,
                        timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    if stderr is not None:
        stderr.append(result.stderr)
    return tuple(torch.load(cwd / f"rank{r}.pt", weights_only=True) for r in (0, 1))


def expect_usage_error(script_module, capsys, monkeypatch, argv: list[str], *fragments: str) -> None:
    """Run the script's main() with `argv` as its command line, in this process (launch.run_main: no 3-second
    torch import per case), and check it refused: exit code 2 and one line on stderr, `<script>: error: ...`,
    holding every fragment. (`monkeypatch`: unused, kept for the callers.)"""
    script = script_module.SCRIPT
    assert launch.run_main(script_module, argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"{script}: error:"), err
    for fragment in fragments:
        assert fragment in err, err


def expect_unreadable_checkpoints_refused(script_module, capsys, monkeypatch, tmp_path: Path) -> None:
    """--play / --resume of a corrupt file, of a torch file that is not a checkpoint of this library, of one
    holding a pickled object (weights_only=True refuses it: loading it could run code) and of one missing part
    of what a checkpoint holds each get a usage error, never a traceback."""
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(random.Random(0).randbytes(1000))  # fixed bytes: the same failure every run
    expect_usage_error(script_module, capsys, monkeypatch, ["--play", str(corrupt)], "is not a readable checkpoint")
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    expect_usage_error(script_module, capsys, monkeypatch, ["--resume", str(foreign)],
                       "is not a checkpoint of this library")
    unsafe = tmp_path / "unsafe.pt"
    torch.save({"script": script_module.SCRIPT, "agent": {}, "args": {}, "obj": script_module.Args()}, unsafe)
    expect_usage_error(script_module, capsys, monkeypatch, ["--play", str(unsafe)], "is not a readable checkpoint")
    incomplete = tmp_path / "incomplete.pt"
    torch.save({"script": script_module.SCRIPT, "agent": {}, "args": {}}, incomplete)
    expect_usage_error(script_module, capsys, monkeypatch, ["--resume", str(incomplete)],
                       "is an incomplete checkpoint (no global_step, iteration, ")


def run_dirs(cwd: Path) -> list[Path]:
    """The run folders (runs/<run-name>/) a script created under `cwd`, oldest first."""
    return runs.logged_folders(cwd / "runs")


def scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in a run folder's event files, or in one events file: {tag: [(step, value), ...]} in the
    order written, as TensorBoard's own reader sees them (runs.read_events)."""
    return {tag: [(e.step, e.value) for e in events] for tag, events in runs.read_events(path)[0].items()}


# ---------------------------------------------------------------------------------------------------------
# The lessons' site (render/), built once per test session
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site built from the working tree, as `python -m render` builds it, into a folder of its own. Under
    pytest-xdist's workers (pytest.ini's -n) it is built once for the whole run: the first worker to ask builds it
    into the run's shared temporary folder, holding a lock the others wait on, and they read the same pages."""
    from filelock import FileLock  # (torch's own dependency)
    from render.__main__ import build

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process (-n 0): as before
        out = tmp_path_factory.mktemp("site") / "_site"
        build(out)
        return out
    shared = tmp_path_factory.getbasetemp().parent  # the run's folder, above each worker's own
    out, built = shared / "site" / "_site", shared / "site" / "built"
    with FileLock(str(shared / "site.lock")):
        if not built.exists():
            build(out)
            built.touch()  # (after the build: a worker that failed to build leaves no half-built site to read)
    return out


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch folder as cwd; the process-wide state a script's main() changes is put back afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # (for a test that sets it; run_main puts it back itself)
    saved = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(),
             torch.utils.deterministic.fill_uninitialized_memory, torch.get_rng_state(), np.random.get_state(),
             random.getstate(), signal.getsignal(signal.SIGINT))
    yield tmp_path
    torch.set_num_threads(saved[0])
    torch.use_deterministic_algorithms(saved[1])
    torch.utils.deterministic.fill_uninitialized_memory = saved[2]
    torch.set_rng_state(saved[3])
    np.random.set_state(saved[4])
    random.setstate(saved[5])
    signal.signal(signal.SIGINT, saved[6])


def run_main(ppo, argv: list[str], capsys) -> tuple[object, str, str]:
    """The script's main() with `argv` as its command line, in this process (launch.run_main; use it with
    `scratch`): (its exit code, "returned" for 0, or the traceback of an exception it let out, as a user would see
    it; stdout; stderr)."""
    capsys.readouterr()
    try:
        code = launch.run_main(ppo, argv)
        outcome = "returned" if code == 0 else code
    except Exception:  # what the user would see as a traceback
        outcome = traceback.format_exc(limit=-3)
    out, err = capsys.readouterr()
    return outcome, out, err
