"""A behaviour fingerprint of the five scripts: for each, a few tiny same-seed runs of its own main() on the
deterministic stand-in envs of tests/scripted_runs.py, and every scalar they log (tag, step, value, exactly as
passed to TensorBoard's add_scalar) and a checksum of each run's final checkpoint (weights, optimizer state,
step count, schedule, random states: all but its args). Wall-clock scalars (charts/SPS) are left out.

A change that only moves code (a restructuring, a function turned into a checked copy) must leave the
fingerprint as it was: record it before, check it after.

    python -m tests.fingerprint --write [MODULE ...]   # record into tests/fingerprints.json (MODULE: ppo_cartpole ...)
    python -m tests.fingerprint --check [MODULE ...]   # run again, compare exactly; exit 1 and say what differs

The runs are those of tests/test_whole_runs.py's CONFIGS (12-sample updates of tiny networks on the CPU), in a
few variants per script that reach the code paths a default run does not (value clipping off, the KL early
stop, Pendulum's three objectives, ...), and one run per script resumed from the first one's checkpoint. Each
script's runs go through one driver process (this file run as a script), as scripted_runs.py's do.

Exact comparison holds for one set of library versions on one kind of processor: floating-point results differ
between a CPU-only torch and a CUDA build of the same version, for one. So the file holds the fingerprints of
each environment they were recorded in (README's two CI venvs: Python 3.11 and 3.13), and --check compares with
this environment's (without one it says so; tests/test_fingerprint.py then skips). --write records this
environment's only, and only at a commit whose behaviour is known good.
"""

import argparse
import hashlib
import json
import math
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
FINGERPRINTS = HERE / "fingerprints.json"
RECORDED_THREADS = 2  # torch's intra-op threads in every run, as on the 2-core machine that recorded them
sys.path[:0] = [p for p in (str(HERE), str(HERE.parent)) if p not in sys.path]

import scripted_runs  # noqa: E402  (also registers the counting envs)

# The base command line of each script's runs: test_whole_runs.CONFIGS (kept in step with it by hand).
CONFIGS = {
    "ppo_cartpole": ["--env-id", "CountingTest-v0", "--num-steps", "12", "--minibatch-size", "6",
                     "--update-epochs", "2", "--hidden-size", "8"],
    "ppo_lunarlander_vec": ["--env-id", "CountingTest-v0", "--num-envs", "2", "--num-steps", "6",
                            "--minibatch-size", "6", "--update-epochs", "2", "--hidden-size", "8",
                            "--vectorization-mode", "sync", "--vf-clip-coef", "0.05"],
    "ppo_pendulum_continuous": ["--env-id", "CountingContinuousTest-v0", "--num-envs", "2", "--num-steps", "6",
                                "--minibatch-size", "6", "--update-epochs", "2", "--hidden-size", "8",
                                "--vectorization-mode", "sync"],
    "ppo_breakout_atari": ["--num-envs", "2", "--num-steps", "6", "--minibatch-size", "6", "--update-epochs", "2",
                           "--hidden-size", "16", "--vf-clip-coef", "0.05", "--precision", "fp32", "--no-cuda",
                           "--vectorization-mode", "sync"],
    "ppo_mario_cnn": ["--num-envs", "2", "--num-steps", "6", "--minibatch-size", "6", "--train-pi-iters", "3",
                      "--train-v-iters", "3", "--hidden-size", "16", "--precision", "fp32", "--no-cuda",
                      "--vectorization-mode", "sync"],
}
EVALUATING = ["ppo_lunarlander_vec", "ppo_pendulum_continuous", "ppo_breakout_atari", "ppo_mario_cnn"]
# Each script's variants: name -> flags on top of its base command line. The first, "base", is the one resumed.
VARIANTS = {
    "ppo_cartpole": {"base": [], "plain": ["--no-norm-adv", "--no-anneal-lr", "--seed", "2"]},
    "ppo_lunarlander_vec": {"base": [], "early_stop": ["--no-clip-vloss", "--target-kl", "1e-9", "--seed", "2"]},
    "ppo_pendulum_continuous": {
        "base": ["--clip-vloss", "--vf-clip-coef", "0.0002"],  # the default objective, clip, with V clipped
        "kl": ["--objective", "kl", "--kl-target", "1e-9", "--no-norm-obs"],  # beta doubled after every update
        "kl_fixed": ["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "3", "--no-norm-reward"],
        "none": ["--objective", "none", "--target-kl", "1e-9", "--seed", "2"],
    },
    "ppo_breakout_atari": {"base": [], "plain": ["--no-anneal-clip", "--no-clip-vloss", "--target-kl", "1e-9",
                                                 "--seed", "2"]},
    "ppo_mario_cnn": {"base": [], "early_stop": ["--target-kl", "1e-9", "--seed", "2"]},
}
UPDATES, STEPS_PER_UPDATE = 3, 12
RESUMED_UPDATES = 1  # the resumed run trains this many updates more than "base" did


def is_wall_clock(tag: str) -> bool:
    """Scalars that measure time (speeds, durations) differ from run to run whatever the code does."""
    return tag == "charts/SPS" or "sps" in tag.lower() or "time" in tag.lower()


def variants(module: str) -> list[dict]:
    """The driver's runs for `module`: each variant of VARIANTS, then "resumed" from "base"'s checkpoint."""
    total = ["--total-timesteps", str(UPDATES * STEPS_PER_UPDATE), "--checkpoint-every", "0"]
    evaluate = ["--eval-every", "1", "--eval-episodes", "2"] if module in EVALUATING else []
    runs = [{"name": name, "argv": [*CONFIGS[module], *total, *evaluate, *flags, "--exp-name", name],
             "stop_update": None} for name, flags in VARIANTS[module].items()]
    more = str((UPDATES + RESUMED_UPDATES) * STEPS_PER_UPDATE)
    runs.append({"name": "resumed", "argv": ["--resume", "{checkpoint:base}", "--total-timesteps", more],
                 "stop_update": None})
    return runs


# ---------------------------------------------------------------------------------------------------------
# The driver: runs in a process of its own, one per script
# ---------------------------------------------------------------------------------------------------------
def digest(value, h=None) -> str:
    """A SHA-256 of a checkpoint value: tensors by dtype, shape and bytes; dicts in key order; lists, tuples and
    plain values by their repr."""
    h = h or hashlib.sha256()
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"tensor {t.dtype} {tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, dict):
        h.update(b"dict")
        for key in sorted(value, key=str):
            h.update(repr(key).encode())
            digest(value[key], h)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__} {len(value)}".encode())
        for item in value:
            digest(item, h)
    else:
        h.update(repr(value).encode())
    return h.hexdigest()


def drive(module: str, runs: list[dict], out: str) -> None:
    """Run `module`'s main() for each of `runs` in turn, in this process; write what each logged and its
    checkpoint's digest to `out`."""
    import importlib
    import signal

    # The MLP scripts set one thread themselves; the CNN scripts keep torch's default, one per core, and a sum
    # split over another number of threads rounds differently. The fingerprints were recorded on 2 cores.
    torch.set_num_threads(RECORDED_THREADS)
    ppo = importlib.import_module(module)
    state = scripted_runs.instrument(ppo)
    if module in scripted_runs.PIXEL_SCRIPTS:
        ppo.make_env = state["make_env"]["stand-in"]
    results = {}
    for run in runs:
        state.update(update=0, stop_update=None, pressed=False, log=[], run_dir=None)
        argv = [results[a[len("{checkpoint:"):-1]]["checkpoint"] if a.startswith("{checkpoint:") else a
                for a in run["argv"]]
        sys.argv = [ppo.SCRIPT, *argv]
        try:
            ppo.main()
            code = 0
        except SystemExit as e:
            code = e.code
        signal.signal(signal.SIGINT, signal.default_int_handler)
        checkpoint = f"{state['run_dir']}/checkpoint.pt"
        ckpt = torch.load(checkpoint, weights_only=True)
        del ckpt["args"]  # (holds the --resume path, a temporary folder)
        results[run["name"]] = {
            "argv": run["argv"], "exit": code, "checkpoint": checkpoint, "checksum": digest(ckpt),
            "scalars": [[tag, step, value] for tag, step, value in state["log"] if not is_wall_clock(tag)],
        }
    for result in results.values():
        del result["checkpoint"]
    Path(out).write_text(json.dumps(results))


def fingerprint(module: str, timeout: float = 300) -> dict:
    """Drive `module`'s runs in a fresh process, in a scratch folder; return {variant: result}."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "runs.json").write_text(json.dumps(variants(module)))
        result = subprocess.run([sys.executable, __file__, "--drive", module, "runs.json", "out.json"], cwd=folder,
                                capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"{module}: the driver failed:\n{result.stderr[-3000:]}")
        return json.loads((Path(folder) / "out.json").read_text())


# ---------------------------------------------------------------------------------------------------------
# Recording and comparing
# ---------------------------------------------------------------------------------------------------------
def environment() -> str:
    """What exact floating-point results depend on besides the code: the Python, torch, NumPy and gymnasium
    versions and the processor architecture. (A torch of the same version built for CUDA gives other float32
    results on the CPU in some runs than its CPU-only build: the environments differ by the version string.)"""
    import gymnasium
    import numpy

    python = ".".join(platform.python_version_tuple()[:2])
    return (f"python {python}, torch {torch.__version__}, numpy {numpy.__version__}, "
            f"gymnasium {gymnasium.__version__}, {platform.machine()}")


def same(a: float, b: float) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def differences(module: str, expected: dict, got: dict, most: int = 10) -> list[str]:
    """What differs between two fingerprints of `module`, one line each (at most `most` scalar lines a run)."""
    lines = []
    if expected.keys() != got.keys():
        lines.append(f"{module}: runs {sorted(expected)} recorded, {sorted(got)} now")
    for name in sorted(expected.keys() & got.keys()):
        a, b, where = expected[name], got[name], f"{module} [{name}]"
        if a["argv"] != b["argv"]:
            lines.append(f"{where}: the run's command line has changed since it was recorded (--write to re-record)")
        if a["exit"] != b["exit"]:
            lines.append(f"{where}: exit status {a['exit']} recorded, {b['exit']} now")
        # The order in which one update's different tags are written is not behaviour: compare by (tag, step),
        # keeping the order of the values logged under one tag and step (a stable sort).
        a_scalars, b_scalars = (sorted(x["scalars"], key=lambda item: (item[0], item[1])) for x in (a, b))
        a_keys, b_keys = [(t, s) for t, s, _ in a_scalars], [(t, s) for t, s, _ in b_scalars]
        if a_keys != b_keys:
            missing = sorted(set(a_keys) - set(b_keys))[:most]
            extra = sorted(set(b_keys) - set(a_keys))[:most]
            lines.append(f"{where}: logged (tag, step) pairs differ: no longer logged {missing}, newly logged {extra}"
                         + ("" if missing or extra else " (same pairs, another count)"))
        scalar_lines = [f"{where}: {ta} at step {sa}: {va!r} recorded, {vb!r} now"
                        for (ta, sa, va), (tb, sb, vb) in zip(a_scalars, b_scalars)
                        if (ta, sa) == (tb, sb) and not same(va, vb)]
        lines += scalar_lines[:most]
        if len(scalar_lines) > most:
            lines.append(f"{where}: ... {len(scalar_lines) - most} more scalars differ")
        if a["checksum"] != b["checksum"]:
            lines.append(f"{where}: the final checkpoint's checksum differs (weights, optimizer or random states)")
    return lines


def load() -> dict:
    """{environment: {module: {run: fingerprint}}}, as recorded."""
    return json.loads(FINGERPRINTS.read_text()) if FINGERPRINTS.is_file() else {}


def dumps(recorded: dict) -> str:
    """The fingerprints as JSON, one scalar a line, so that a re-recorded file's diff shows which values moved."""
    lines = ["{"]
    for e, env in enumerate(sorted(recorded)):
        lines.append(f" {json.dumps(env)}: {{")
        modules = sorted(recorded[env])
        for m, module in enumerate(modules):
            lines.append(f"  {json.dumps(module)}: {{")
            runs = recorded[env][module]
            for r, (name, run) in enumerate(runs.items()):
                lines.append(f"   {json.dumps(name)}: {{")
                for key in ("argv", "exit", "checksum"):
                    lines.append(f"    {json.dumps(key)}: {json.dumps(run[key])},")
                lines.append('    "scalars": [')
                lines += [f"     {json.dumps(s)}," for s in run["scalars"]]
                if run["scalars"]:
                    lines[-1] = lines[-1][:-1]
                lines.append("    ]")
                lines.append("   }" + ("," if r < len(runs) - 1 else ""))
            lines.append("  }" + ("," if m < len(modules) - 1 else ""))
        lines.append(" }" + ("," if e < len(recorded) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(modules: list[str]) -> None:
    """Record the fingerprints of `modules` for this environment (those of other environments are kept)."""
    recorded = load()
    here = recorded.setdefault(environment(), {})
    for module in modules:
        here[module] = fingerprint(module)
        print(f"{module}: {len(here[module])} runs, "
              f"{sum(len(r['scalars']) for r in here[module].values())} scalars recorded")
    FINGERPRINTS.write_text(dumps(recorded))
    print(f"written to {FINGERPRINTS} (for {environment()})")


def recorded_here() -> dict:
    """{module: {run: fingerprint}} recorded for this environment ({} if none is)."""
    return load().get(environment(), {})


def check(modules: list[str]) -> list[str]:
    """The differences between the recorded fingerprints of `modules` and fresh ones ([] when they all match)."""
    recorded = recorded_here()
    if not recorded:
        return [f"no fingerprints recorded for this environment ({environment()}), only for: "
                f"{'; '.join(load()) or 'none'}. Record them with --write at a commit known to behave as it should"]
    problems = []
    for module in modules:
        if module not in recorded:
            problems.append(f"{module}: no fingerprint recorded (python -m tests.fingerprint --write {module})")
            continue
        problems += differences(module, recorded[module], fingerprint(module))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fingerprint", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help=f"record the fingerprints into {FINGERPRINTS.name}")
    mode.add_argument("--check", action="store_true", help="run again and compare exactly with the recorded ones")
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"scripts to fingerprint (default: all five: {', '.join(CONFIGS)})")
    args = parser.parse_args(argv)
    unknown = [module for module in args.modules if module not in CONFIGS]
    if unknown:
        parser.error(f"unknown MODULE {', '.join(unknown)}: one of {', '.join(CONFIGS)}")
    modules = args.modules or list(CONFIGS)
    if args.write:
        write(modules)
        return 0
    problems = check(modules)
    for line in problems:
        print(line)
    if problems:
        print("the fingerprint differs: the scripts no longer behave as they did when it was recorded")
        return 1
    print(f"{len(modules)} scripts: every scalar and checkpoint as recorded")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:
        drive(sys.argv[2], json.loads(Path(sys.argv[3]).read_text()), sys.argv[4])
    else:
        sys.exit(main())
