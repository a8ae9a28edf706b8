"""A behaviour fingerprint of the five scripts: for each, a few tiny same-seed runs of its own main() on the
deterministic stand-in envs of tests/scripted_runs.py, and every scalar they log (tag, step, value, exactly as
passed to TensorBoard's add_scalar) and a checksum of each entry of each run's final checkpoint (weights,
optimizer state, step count, schedule, random states: all but its args). Wall-clock scalars (charts/SPS) are left
out.

Two comparisons, for two questions:

    python -m tests.fingerprint --against REV [MODULE ...]  # same behaviour as at REV? exact, on this machine
    python -m tests.fingerprint --check [MODULE ...]        # what tests/fingerprints.json holds? within TOLERANCE
    python -m tests.fingerprint --write [MODULE ...]        # record into tests/fingerprints.json

--against is the proof that a change only moves code (a restructuring, a function turned into a checked copy):
it fingerprints REV's scripts and the working tree's, one after the other on this machine, and compares them
to the bit, scalars and checkpoint checksums; exit status 1 and what differs, 0 when nothing does. REV's files
come from `git archive REV` into a temporary folder, deleted afterwards; the runs there are driven by this
file's driver and tests/scripted_runs.py as they are in the working tree, with REV's folder first on the driver's
PYTHONPATH (benchmarks.core.launch.environment) and the working tree's root after it, so both sides run the same
harness (but for benchmarks.core's run_main: REV's own, where REV has benchmarks/ as a package) and only the
scripts differ. (A flag the harness passes and REV's script does not know shows as an exit status of 2 at REV.)

Bit-exact results hold on one processor, not across processors with the same library versions (a sum splits
differently between SIMD widths, kernels and threads, and rounds differently), so the recorded fingerprint is
compared within a tolerance meant to hold on any processor: --check, and tests/test_fingerprint.py in the suite.
What must match exactly there: the runs, their command lines, their exit status, and the (tag, step) pairs each
one logs; each value within TOLERANCE of the recorded one (the comment above it gives the measurements behind
it). Checksums are recorded but not compared: any rounding changes them. Re-record (--write) after a change
meant to change behaviour; the file names the environment it was recorded in, for information.

The runs start from CONFIGS, the tiny configurations (12-sample updates of tiny networks on the CPU) that
tests/test_whole_runs.py's runs start from too, in a few variants per script that reach the code paths a default
run does not (the policy clip acting, value clipping off, the KL early stop, Pendulum's three objectives, ...),
and one run per script resumed from the first one's checkpoint. Each script's runs go through one driver process
(this file run by its path, as scripted_runs.py's are: tests/ is then first on its sys.path), each run the
script's main() through benchmarks.core.launch.run_main.
"""

import argparse
import hashlib
import io
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch

from benchmarks.core import launch, records

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FINGERPRINTS = HERE / "fingerprints.json"
RECORDED_THREADS = 2  # torch's intra-op threads in the CNN scripts' runs (--threads), as recorded

# The tiny configurations, the one definition: the base command line of each script's runs here, and of
# tests/test_whole_runs.py's (which adds WHOLE_RUN_FLAGS to Pendulum's). On the counting envs of tests/conftest.py
# (the pixel scripts on scripted_runs.py's stand-in); 12 samples an update (one env x 12 steps, or two envs x 6: a
# multiple of 6 steps, so every rollout ends on an episode boundary), minibatches of 6, tiny networks, on the CPU,
# the vector envs stepped in the driver's process (sync: async workers would not have the test envs).
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
    # (minibatches of 6 samples: one env's whole 6-step rollout, as the memory lesson's minibatches must be)
    "ppo_lstm_memory": ["--env-id", "CountingTest-v0", "--num-envs", "2", "--num-steps", "6", "--minibatch-size", "6",
                        "--update-epochs", "2", "--hidden-size", "8", "--vectorization-mode", "sync",
                        "--vf-clip-coef", "0.05"],
}
EVALUATING = ["ppo_lunarlander_vec", "ppo_pendulum_continuous", "ppo_breakout_atari", "ppo_mario_cnn",
              "ppo_lstm_memory"]
# Each script's variants: name -> flags on top of its base command line. The first, "base", is the one resumed.
VARIANTS = {
    # (--clip-coef: epsilon small enough that the clip acts; in the other runs no ratio leaves 1 +/- epsilon)
    "ppo_cartpole": {"base": [], "plain": ["--no-norm-adv", "--no-anneal-lr", "--clip-coef", "0.005", "--seed", "2"]},
    "ppo_lunarlander_vec": {"base": [], "early_stop": ["--no-clip-vloss", "--target-kl", "1e-9", "--seed", "2"]},
    "ppo_pendulum_continuous": {
        "base": ["--clip-vloss", "--vf-clip-coef", "0.0002"],  # the default objective, clip, with V clipped
        "kl": ["--objective", "kl", "--kl-target", "1e-9", "--no-norm-obs"],  # beta doubled after every update
        "kl_fixed": ["--objective", "kl", "--no-kl-adaptive", "--kl-beta-init", "3", "--no-norm-reward"],
        "none": ["--objective", "none", "--target-kl", "1e-9", "--seed", "2"],
    },
    "ppo_breakout_atari": {"base": [], "plain": ["--anneal-clip", "--no-clip-vloss", "--target-kl", "1e-9",
                                                 "--seed", "2"]},
    "ppo_mario_cnn": {"base": [], "early_stop": ["--target-kl", "1e-9", "--seed", "2"]},
    "ppo_lstm_memory": {"base": [], "no_memory": ["--no-lstm", "--frame-stack", "2", "--no-norm-obs", "--target-kl",
                                                  "1e-9", "--seed", "2"]},
}
UPDATES, STEPS_PER_UPDATE = 3, 12
RESUMED_UPDATES = 1  # the resumed run trains this many updates more than "base" did

# A value agrees with the recorded one when |now - recorded| <= absolute + relative * max(|now|, |recorded|).
# Measured on 2026-12-01 on an AMD EPYC (AVX512, no AMX), against aa17eb0's scripts recorded there: another summation
# order moved no value past 21% of this tolerance (--check's "closest to the tolerance" line): --threads 1 7%,
# --threads 4 12%, ONEDNN_MAX_CPU_ISA=AVX2 8% (its values and checksums are, to the bit, those the file held from
# another machine), ATEN_CPU_CAPABILITY=default (torch's kernels without SIMD) 21%, explained_variance -0.1698290
# recorded, -0.1698216 now; the records for Python 3.11 (CPU-only torch) and 3.13 (its CUDA build) that commit
# a550b62 held differ by 0.5% of it. The values that move most are near-cancelling sums (explained_variance =
# 1 - Var(residual) / Var(return); the policy loss, over advantages normalized to mean 0): hence the absolute
# floor. A behaviour change moves values further: the 18 of tests/mutations.py's 25 mutations at that commit that
# alter these runs each moved some value by 19 times this tolerance or more (the least: value clipping's min and
# max swapped, LunarLander's old_approx_kl 0.000544 -> 0.000585), and flipping the entropy bonus's sign
# (entropy-bonus-sign-flipped: the suite's only check of that sign) moved CartPole's old_approx_kl by 4.3 times it.
TOLERANCE = {"relative": 2e-4, "absolute": 2e-6}


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


def drive(module: str, runs: list[dict], out: str, root: str, threads: int) -> None:
    """Run `module`'s main(), imported from the folder `root` (first on this process's PYTHONPATH), for each of
    `runs` in turn, in this process, with `threads` torch threads; write what each logged and its checkpoint's
    digest to `out`."""
    # (here, not at the top: only the driver, run by its path, has tests/ on sys.path; also registers the envs)
    import scripted_runs

    # The MLP scripts set one thread themselves; the CNN scripts keep torch's default, one per core, and a sum
    # split over another number of threads rounds differently: the same number on every machine, as recorded.
    torch.set_num_threads(threads)
    ppo = launch.import_lesson(module)
    if Path(ppo.__file__).resolve().parent != Path(root).resolve():
        raise RuntimeError(f"{module} was imported from {ppo.__file__}, not from {root}")
    state = scripted_runs.instrument(ppo)
    if module in scripted_runs.PIXEL_SCRIPTS:
        ppo.make_env = state["make_env"]["stand-in"]
    results = {}
    for run in runs:
        state.update(update=0, stop_update=None, pressed=False, log=[], run_dir=None)
        argv = [results[a[len("{checkpoint:"):-1]]["checkpoint"] if a.startswith("{checkpoint:") else a
                for a in run["argv"]]
        code = launch.run_main(ppo, argv)
        checkpoint = f"{state['run_dir']}/checkpoint.pt"
        checksums = {}  # (a run refused at its command line writes no checkpoint)
        if code == 0:
            ckpt = torch.load(checkpoint, weights_only=True)
            del ckpt["args"]  # (holds the --resume path, a temporary folder)
            checksums = {str(key): digest(value) for key, value in ckpt.items()}
        results[run["name"]] = {
            "argv": run["argv"], "exit": code, "checkpoint": checkpoint, "checksums": checksums,
            "scalars": [[tag, step, value] for tag, step, value in state["log"] if not is_wall_clock(tag)],
        }
    for result in results.values():
        del result["checkpoint"]
    Path(out).write_text(json.dumps(results))


def fingerprint(module: str, root: Path = ROOT, threads: int = RECORDED_THREADS, timeout: float = 300) -> dict:
    """Drive `module`'s runs (the script as it is in the folder `root`) in a fresh process, in a scratch folder;
    return {variant: result}."""
    # `root` first on the driver's PYTHONPATH (its lessons), the working tree's root after it (benchmarks.core, for
    # a REV that has none)
    env = launch.environment(root)
    env["PYTHONPATH"] += os.pathsep + str(ROOT)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "runs.json").write_text(json.dumps(variants(module)))
        command = launch.python_command(__file__, "--drive", module, "runs.json", "out.json", str(root), str(threads))
        result = launch.run(command, Path(folder), timeout=timeout, env=env)
        if result.returncode != 0:
            raise RuntimeError(f"{module} (from {root}): the driver failed:\n{result.stderr[-3000:]}")
        return json.loads((Path(folder) / "out.json").read_text())


# ---------------------------------------------------------------------------------------------------------
# Comparing, recording
# ---------------------------------------------------------------------------------------------------------
def agree(a: float, b: float, tolerance: dict | None) -> bool:
    """a and b are the same value (NaN agrees with NaN), or within `tolerance` of each other (None: exactly)."""
    if a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
        return True
    if tolerance is None or not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= tolerance["absolute"] + tolerance["relative"] * max(abs(a), abs(b))


def differences(module: str, expected: dict, got: dict, tolerance: dict | None = None, most: int = 10,
                old: str = "recorded", new: str = "now") -> list[str]:
    """What differs between two fingerprints of `module`, one line each (at most `most` scalar lines a run).
    tolerance None: every value and checksum exactly; else each value within `tolerance` (TOLERANCE's keys), no
    checksums. `old` and `new` name the two sides in the lines."""
    lines = []
    if expected.keys() != got.keys():
        lines.append(f"{module}: runs {sorted(expected)} {old}, {sorted(got)} {new}")
    for name in sorted(expected.keys() & got.keys()):
        a, b, where = expected[name], got[name], f"{module} [{name}]"
        if a["argv"] != b["argv"]:
            lines.append(f"{where}: the run's command line differs ({old} {a['argv']}, {new} {b['argv']}: "
                         "--write re-records)")
        if a["exit"] != b["exit"]:
            lines.append(f"{where}: exit status {a['exit']} {old}, {b['exit']} {new}")
        # The order in which one update's different tags are written is not behaviour: compare by (tag, step),
        # keeping the order of the values logged under one tag and step (a stable sort).
        a_scalars, b_scalars = (sorted(x["scalars"], key=lambda item: (item[0], item[1])) for x in (a, b))
        a_keys, b_keys = [(t, s) for t, s, _ in a_scalars], [(t, s) for t, s, _ in b_scalars]
        if a_keys != b_keys:
            missing = sorted(set(a_keys) - set(b_keys))[:most]
            extra = sorted(set(b_keys) - set(a_keys))[:most]
            lines.append(f"{where}: logged (tag, step) pairs differ: no longer logged {missing}, newly logged {extra}"
                         + ("" if missing or extra else " (same pairs, another count)"))
        scalar_lines = [f"{where}: {ta} at step {sa}: {va!r} {old}, {vb!r} {new}"
                        for (ta, sa, va), (tb, sb, vb) in zip(a_scalars, b_scalars)
                        if (ta, sa) == (tb, sb) and not agree(va, vb, tolerance)]
        lines += scalar_lines[:most]
        if len(scalar_lines) > most:
            lines.append(f"{where}: ... {len(scalar_lines) - most} more scalars differ")
        if tolerance is None and a["checksums"] != b["checksums"]:
            a_sums, b_sums = a["checksums"], b["checksums"]
            if a_sums.keys() != b_sums.keys():
                lines.append(f"{where}: the final checkpoint's entries differ: {sorted(a_sums)} {old}, "
                             f"{sorted(b_sums)} {new}")
            changed = sorted(key for key in a_sums.keys() & b_sums.keys() if a_sums[key] != b_sums[key])
            if changed:
                lines.append(f"{where}: the final checkpoint's {', '.join(changed)} differ{'s' * (len(changed) == 1)}")
    return lines


def share_used(module: str, expected: dict, got: dict, tolerance: dict) -> tuple[float, str]:
    """The largest share of `tolerance` that a value's distance from the recorded one takes up (over 1: beyond
    it), and where: (0.0, "") when every value is the recorded one."""
    worst = (0.0, "")
    for name in sorted(expected.keys() & got.keys()):
        a_scalars, b_scalars = (sorted(x[name]["scalars"], key=lambda item: item[:2]) for x in (expected, got))
        for (ta, sa, va), (tb, sb, vb) in zip(a_scalars, b_scalars):
            if (ta, sa) == (tb, sb) and va != vb and math.isfinite(va) and math.isfinite(vb):
                share = abs(va - vb) / (tolerance["absolute"] + tolerance["relative"] * max(abs(va), abs(vb)))
                if share > worst[0]:
                    worst = (share, f"{module} [{name}]: {ta} at step {sa}: {va!r} recorded, {vb!r} now")
    return worst


def load() -> dict:
    """{"environment": where it was recorded, "fingerprints": {module: {run: fingerprint}}}, as recorded."""
    return json.loads(FINGERPRINTS.read_text()) if FINGERPRINTS.is_file() else {"environment": None,
                                                                                "fingerprints": {}}


def recorded() -> dict:
    """{module: {run: fingerprint}} as recorded ({} if nothing is)."""
    return load()["fingerprints"]


def dumps(record: dict) -> str:
    """The record as JSON, one scalar a line, so that a re-recorded file's diff shows which values moved."""
    lines = ["{", f' "environment": {json.dumps(record["environment"])},', ' "fingerprints": {']
    modules = sorted(record["fingerprints"])
    for m, module in enumerate(modules):
        lines.append(f"  {json.dumps(module)}: {{")
        runs = record["fingerprints"][module]
        for r, (name, run) in enumerate(runs.items()):
            lines.append(f"   {json.dumps(name)}: {{")
            for key in ("argv", "exit", "checksums"):
                lines.append(f"    {json.dumps(key)}: {json.dumps(run[key])},")
            lines.append('    "scalars": [')
            lines += [f"     {json.dumps(s)}," for s in run["scalars"]]
            if run["scalars"]:
                lines[-1] = lines[-1][:-1]
            lines.append("    ]")
            lines.append("   }" + ("," if r < len(runs) - 1 else ""))
        lines.append("  }" + ("," if m < len(modules) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def write(modules: list[str], threads: int = RECORDED_THREADS) -> None:
    """Record the fingerprints of `modules` (those of the other scripts are kept), and this environment."""
    record = load()
    record["environment"] = records.versions()
    for module in modules:
        record["fingerprints"][module] = fingerprint(module, threads=threads)
        runs = record["fingerprints"][module]
        print(f"{module}: {len(runs)} runs, {sum(len(r['scalars']) for r in runs.values())} scalars recorded")
    FINGERPRINTS.write_text(dumps(record))
    print(f"written to {FINGERPRINTS} (in {records.versions()})")


def check(modules: list[str], threads: int = RECORDED_THREADS) -> tuple[list[str], tuple[float, str]]:
    """The differences beyond TOLERANCE between the recorded fingerprints of `modules` and fresh ones ([] when they
    all agree), and the largest share of the tolerance a value used (share_used)."""
    record, problems, closest = recorded(), [], (0.0, "")
    for module in modules:
        if module not in record:
            problems.append(f"{module}: no fingerprint recorded (python -m tests.fingerprint --write {module})")
            continue
        got = fingerprint(module, threads=threads)
        problems += differences(module, record[module], got, TOLERANCE)
        closest = max(closest, share_used(module, record[module], got, TOLERANCE))
    return problems, closest


def checkout(rev: str, folder: Path) -> str:
    """REV's tracked files, as `git archive` gives them, into `folder`; return REV's commit id."""
    commit = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=ROOT,
                            capture_output=True, text=True)
    if commit.returncode != 0:
        raise ValueError(f"{rev!r} names no commit of the repository at {ROOT}")
    archive = subprocess.run(["git", "archive", "--format=tar", commit.stdout.strip()], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # (3.11.4+)
    return commit.stdout.strip()


def against(rev: str, modules: list[str], threads: int = RECORDED_THREADS) -> list[str]:
    """The exact differences between the fingerprints of `modules` at REV and in the working tree, both made here
    ([] when every scalar and checksum is the same)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="fingerprint-") as folder:
        commit = checkout(rev, Path(folder))
        print(f"{rev} is {commit[:12]}, its files in {folder}", flush=True)
        for module in modules:
            try:
                at_rev = fingerprint(module, Path(folder), threads)
            except RuntimeError as e:  # (REV lacks the script, or something the harness needs)
                found = [f"{module}: cannot be fingerprinted at {rev}: {e}"]
            else:
                found = differences(module, at_rev, fingerprint(module, threads=threads), None, old=f"at {rev}",
                                    new="in the working tree")
            print(f"{module}: {'differs' if found else 'the same'}", flush=True)
            problems += found
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fingerprint", description=(
        "A behaviour fingerprint of the five scripts: --against REV compares it with REV's to the bit, on this "
        f"machine; --check with {FINGERPRINTS.name}'s within a tolerance, on other machines too."))
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--against", metavar="REV",
                      help="fingerprint REV's scripts and the working tree's here and compare them exactly")
    mode.add_argument("--check", action="store_true",
                      help=f"run again and compare with {FINGERPRINTS.name} within the tolerance")
    mode.add_argument("--write", action="store_true", help=f"record the fingerprints into {FINGERPRINTS.name}")
    parser.add_argument("--threads", type=int, default=RECORDED_THREADS,
                        help=f"torch threads in the CNN scripts' runs (default {RECORDED_THREADS}, as recorded; the "
                             "MLP scripts set 1 themselves)")
    parser.add_argument("modules", nargs="*", metavar="MODULE",
                        help=f"scripts to fingerprint (default: all five: {', '.join(CONFIGS)})")
    args = parser.parse_args(argv)
    unknown = [module for module in args.modules if module not in CONFIGS]
    if unknown:
        parser.error(f"unknown MODULE {', '.join(unknown)}: one of {', '.join(CONFIGS)}")
    modules = args.modules or list(CONFIGS)
    if args.write:
        write(modules, args.threads)
        return 0
    if args.against:
        try:
            problems = against(args.against, modules, args.threads)
        except ValueError as e:
            parser.error(str(e))
        verdict = (f"the working tree's scripts behave otherwise than {args.against}'s",
                   f"{', '.join(modules)}: every scalar and checkpoint the same as at {args.against}")
    else:
        problems, (share, where) = check(modules, args.threads)
        print(f"closest to the tolerance: {share:.1%} of it" + (f" ({where})" if where else " (all exact)"))
        verdict = ("the fingerprint differs: the scripts no longer behave as they did when it was recorded",
                   f"{', '.join(modules)}: every scalar as recorded, within the tolerance")
    for line in problems:
        print(line)
    print(verdict[0] if problems else verdict[1])
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:
        drive(sys.argv[2], json.loads(Path(sys.argv[3]).read_text()), sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        sys.exit(main())
