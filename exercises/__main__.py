"""python -m exercises: write PPO's parts yourself.

    python -m exercises                  # the exercises, which are done and which is next
    python -m exercises check NAME       # run your function on the cases (exit 0: all pass)
    python -m exercises train NAME       # train the lesson with your function; where its curve lies
    python -m exercises train NAME --lesson   # the same with the lesson's own function
    python -m exercises solution NAME    # the lesson's own function, and each trap explained
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
    parser.add_argument("command", nargs="?", choices=["check", "train", "solution"])
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(EXERCISES)}")
    parser.add_argument("--lesson", action="store_true", help="train: with the lesson's own function, not yours")
    args = parser.parse_args(argv)
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
    from exercises.train import TRAININGS, UNTRAINED, train

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
    training = TRAININGS[name]
    print(f"{training.lesson} {' '.join(training.flags)} --seed 1 with "
          f"{'its own function' if lesson else f'exercises/{name}.py'} ({training.wait} on 2 CPU cores)")
    lines = train(name, fn)
    print("\n".join(lines))
    return 1 if " stopped" in lines[0] else 0


if __name__ == "__main__":
    sys.exit(main())
