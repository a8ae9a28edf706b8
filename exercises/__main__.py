"""python -m exercises: write PPO's parts yourself.

    python -m exercises                  # the exercises, which are done and which is next
    python -m exercises check NAME       # run your function on the cases (exit 0: all pass)
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
    parser.add_argument("command", nargs="?", choices=["check", "solution"])
    parser.add_argument("name", nargs="?", help=f"one of: {', '.join(EXERCISES)}")
    args = parser.parse_args(argv)
    if args.command is None:
        states = {name: status(name) for name in EXERCISES}
        following = next((name for name, state in states.items() if state != "done"), None)
        for name, exercise in EXERCISES.items():
            mark = "  <- next" if name == following else ""
            print(f"{name:11s} {states[name]:12s} {exercise.idea} (exercises/{name}.py; the lesson: "
                  f"{exercise.lesson}){mark}")
        print(f"\npython -m exercises check {following}" if following else "\nall done")
        return 0
    if args.name not in EXERCISES:
        parser.error(f"{args.command} needs the name of an exercise, one of: {', '.join(EXERCISES)}"
                     + (f" (got {args.name!r})" if args.name else ""))
    if args.command == "solution":
        print(solution(args.name))
        return 0
    report = check(args.name)
    print("\n".join(report))
    return 0 if report[-1].endswith("cases pass") else 1


if __name__ == "__main__":
    sys.exit(main())
