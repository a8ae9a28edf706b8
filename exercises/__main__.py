"""python -m exercises: write PPO's parts yourself.

    python -m exercises                  # the exercises, which are done and which is next
    python -m exercises check NAME       # run your function on the cases (exit 0: all pass)
    python -m exercises train NAME       # train the lesson with your function; where its curve lies
    python -m exercises train NAME --lesson   # the same with the lesson's own function
    python -m exercises solution NAME    # the lesson's own function, and each trap explained
    python -m exercises bug              # silent bugs to hunt: a lesson that trains with a mistake planted
    python -m exercises bug N            # train bug N; its diagnostics beside a healthy run's
    python -m exercises bug N --answer   # the planted edit, what it does, and what gave it away
"""

from __future__ import annotations

import argparse
import sys

from exercises import EXERCISES, check, solution, status


class Parser(argparse.ArgumentParser):
    def error(self, message):  # bad input: one line, exit 2
        print(f"python -m exercises: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m exercises", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["check", "train", "solution", "bug"])
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(EXERCISES)} (bug: a bug's number)")
    parser.add_argument("--lesson", action="store_true", help="train: with the lesson's own function, not yours")
    parser.add_argument("--answer", action="store_true", help="bug N: show what the bug is")
    args = parser.parse_intermixed_args(argv)
    if args.answer and args.command != "bug":
        parser.error("--answer goes with bug N only")
    if args.command == "bug":
        return bug_command(args.name, args.answer, parser)
    if args.command is None:
        states = {name: status(name) for name in EXERCISES}
        following = next((name for name, state in states.items() if state != "done"), None)
        width = max(map(len, EXERCISES)) + 1
        for name, exercise in EXERCISES.items():
            mark = "  <- next" if name == following else ""
            print(f"{name:{width}s} {states[name]:12s} {exercise.idea} (exercises/{name}.py; the lesson: "
                  f"{exercise.lesson}){mark}")
        print(f"\npython -m exercises check {following}" if following else "\nall done")
        return 0
    if args.name not in EXERCISES:
        parser.error(f"{args.command} needs the name of an exercise, one of: {', '.join(EXERCISES)}"
                     + (f" (got {args.name!r})" if args.name else ""))
    if args.lesson and args.command != "train":
        parser.error("--lesson goes with train only")
    if args.command == "solution":
        print(solution(args.name))
        return 0
    if args.command == "train":
        return train_command(args.name, args.lesson, parser)
    report = check(args.name)
    print("\n".join(report))
    return 0 if report[-1].endswith("cases pass") else 1


def train_command(name: str, lesson: bool, parser: Parser) -> int:
    """Train with the learner's function (after its check: a function not written is refused, one that fails a
    case trains, to show what the mistake does) or the lesson's own."""
    from exercises.train import OWN, TRAININGS, UNTRAINED, train

    if name in UNTRAINED:
        parser.error(f"no train for {name}: {UNTRAINED[name]}")
    fn = None
    if not lesson:
        report = check(name)
        if "not written yet" in report[-1]:
            parser.error(f"{report[-1].split(' is not')[0]} is not written yet: nothing to train")
        if not report[-1].endswith("cases pass"):
            print("\n".join(["your function fails a case; it trains anyway, to show what the mistake does:",
                              *report[-3:], ""]))
        fn = EXERCISES[name].learner()
    if name in OWN:  # REINFORCE: its own minimal trainer, no lesson
        from exercises import reinforce_cartpole

        command, wait = OWN[name]
        print(f"{command} with {'its own function' if lesson else f'exercises/{name}.py'} ({wait} on 2 CPU cores)")
        lines = reinforce_cartpole.report(fn)
        print("\n".join(lines))
        return 1 if " stopped" in lines[0] else 0
    training = TRAININGS[name]
    print(f"{' '.join([training.lesson, *training.flags])} --seed 1 with "
          f"{'its own function' if lesson else f'exercises/{name}.py'} ({training.wait} on 2 CPU cores)")
    lines = train(name, fn)
    print("\n".join(lines))
    return 1 if " stopped" in lines[0] else 0


def bug_command(number: str | None, answer: bool, parser: Parser) -> int:
    """The list of bugs, a bug's training run, or its answer."""
    from exercises import bugs

    if number is None:
        if answer:
            parser.error("--answer needs the bug's number: python -m exercises bug N --answer")
        for n, bug in enumerate(bugs.BUGS, start=1):
            print(f"bug {n}: {bugs.command(bug.recipe)} ({bug.recipe.wait} on 2 CPU cores)")
        print("\nEach trains its lesson with one mistake planted: it raises no error. Train one, read its logs as you "
              "would your own run's, and find the mistake:\n\npython -m exercises bug 1")
        return 0
    if not number.isdigit() or not 1 <= int(number) <= len(bugs.BUGS):
        parser.error(f"bug needs a bug's number, 1 to {len(bugs.BUGS)} (got {number!r})")
    n = int(number)
    bug = bugs.BUGS[n - 1]
    if answer:
        print("\n".join(bugs.answer(n)))
        return 0
    print(f"{bugs.command(bug.recipe, '--seed', '1')}, with bug {n} planted ({bug.recipe.wait})")
    run_dir = bugs.train(n)
    print("\n".join([f"your run: {run_dir}", "", *bugs.comparison(run_dir, bug.recipe), "",
                     "Its curves: tensorboard --logdir runs (a healthy run beside it: "
                     f"{bugs.command(bug.recipe, '--seed', '1', '--exp-name', 'healthy')}). What each diagnostic "
                     "means, and its healthy range: benchmarks/README.md, \"What a healthy run looks like\".",
                     f"When you think you know: python -m exercises bug {n} --answer"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
