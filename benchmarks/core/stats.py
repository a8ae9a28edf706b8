"""The statistics every report uses: rolling means, first crossings, percentiles and spreads, mean +/- std over
seeds, a learning curve read at a step, and the diagnostics' ranges. Pure functions of numbers."""

from __future__ import annotations

import statistics

# Logged once per update by every script: how far the update moved pi (approx_kl, clipfrac), how well V fits
# the returns (explained_variance, value_loss) and how random pi still is (entropy).
DIAGNOSTIC_TAGS = ("losses/approx_kl", "losses/clipfrac", "losses/explained_variance", "losses/entropy",
                   "losses/value_loss")


def rolling_mean(values: list[float], window: int) -> list[float]:
    """At each episode i, the mean of the `window` most recent values (episodes i-window+1 .. i), or of all of
    them while fewer than `window` have come."""
    return [sum(values[max(0, i - window + 1) : i + 1]) / min(i + 1, window) for i in range(len(values))]


def rolling_first_crossing(
    steps: list[int], wall_times: list[float], returns: list[float], window: int, threshold: float
) -> tuple[int, float] | None:
    """(global_step, wall_time) of the first episode at which the mean of the last `window` returns is
    >= threshold, or None if that never happens (including when there are fewer than `window` episodes).
    The three lists are parallel: one entry per finished episode, in logging order."""
    means = rolling_mean(returns, window)
    for i in range(window - 1, len(returns)):  # from the first full window on
        if means[i] >= threshold:
            return steps[i], wall_times[i]
    return None


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) of the values, interpolated linearly between the two nearest ranks
    (numpy's default): position q / 100 * (n - 1) in the sorted values."""
    ordered = sorted(values)
    position = q / 100 * (len(ordered) - 1)
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def spread(values: list[float]) -> dict:
    """count, min, 5th percentile, median, 95th percentile and max of a non-empty list of values."""
    return {"count": len(values), "min": min(values), "p5": percentile(values, 5),
            "median": percentile(values, 50), "p95": percentile(values, 95), "max": max(values)}


def mean_std(values: list[float], spec: str = ".1f", seeds: bool = False) -> str:
    """'mean +/- std' over seeds (the sample std; the value alone for one seed); `seeds` adds how many, as
    "(3 seeds)" or "(1 seed)"."""
    text = format(values[0], spec) if len(values) == 1 else \
        f"{statistics.fmean(values):{spec}} +/- {statistics.stdev(values):{spec}}"
    return text + (f" ({len(values)} seed{'s' * (len(values) > 1)})" if seeds else "")


def curve_at(points: list[dict], tag: str, window: int, step: int) -> dict[str, tuple[float, float]]:
    """{seed: (rolling mean, wall seconds)} of each seed's curve at env step `step`: the mean of the last `window`
    training values of `tag` at the last episode that finished at or before it, and that episode's wall seconds;
    seeds (keyed as strings) with no episode finished by then are left out. `points` as in a curves CSV."""
    done: dict[str, list[dict]] = {}
    for point in points:
        if point["kind"] == "training" and point["tag"] == tag and point["env_steps"] <= step:
            done.setdefault(str(point["seed"]), []).append(point)
    return {seed: (statistics.fmean(episode["value"] for episode in episodes[-window:]), episodes[-1]["wall_seconds"])
            for seed, episodes in done.items()}


def diagnostic_spreads(scalars: dict[str, list], tags: tuple[str, ...]) -> list[dict]:
    """One row per tag the run logged and per part of the run: "all" its values, "second half" the later half of
    them (values[n // 2:], the middle one included when n is odd), in logging order (one value per update)."""
    rows = []
    for tag in tags:
        values = [event.value for event in scalars.get(tag, [])]
        if not values:
            continue
        for part, part_values in run_parts(values).items():
            rows.append({"tag": tag, "part": part, **spread(part_values)})
    return rows


def run_parts(values: list) -> dict[str, list]:
    """A run's per-update values split as the diagnostics records hold them: "all" of them, and its "second half"
    (values[n // 2:], the middle one included when n is odd)."""
    return {"all": values, "second half": values[len(values) // 2 :]}


def diagnostic_ranges(rows: list[dict]) -> list[dict]:
    """The rows of a diagnostics CSV (numbers as numbers) summed up over the seeds, one row per label, tag and
    part in first-seen order: the seeds, the counts, the lowest min and 5th percentile, the median of the
    medians, the highest 95th percentile and max: [p5, p95] is the band that the middle 90% of every seed's
    values fall in."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row.get("label", ""), row["tag"], row["part"]), []).append(row)
    return [
        {"label": label, "tag": tag, "part": part, "seeds": [row["seed"] for row in group],
         "counts": [row["count"] for row in group], "min": min(row["min"] for row in group),
         "p5": min(row["p5"] for row in group), "median": statistics.median(row["median"] for row in group),
         "p95": max(row["p95"] for row in group), "max": max(row["max"] for row in group)}
        for (label, tag, part), group in groups.items()
    ]


def active_seconds(seconds: list[float], longest: float = 600.0) -> float:
    """How long a run trained, from the wall seconds at which it logged its curve points (from its start): the
    first point's seconds, then every interval between consecutive points of at most `longest` seconds. A longer
    silence (a stop before a resume, a pause with SIGSTOP) is left out; an evaluation, or the updates between two
    episodes' ends, take far less than the default 10 minutes in these runs."""
    ordered = sorted(seconds)
    if not ordered:
        return 0.0
    return ordered[0] + sum(b - a for a, b in zip(ordered, ordered[1:]) if b - a <= longest)


def binned_means(points: list[tuple[int, float]], width: int) -> list[dict]:
    """A learning curve by bins of `width` steps: for each bin in which some (step, value) ended, the bin's end and
    the mean of its values, as {"step", "mean_return"} (the grids' curves CSVs)."""
    bins: dict[int, list[float]] = {}
    for step, value in points:
        bins.setdefault((step - 1) // width, []).append(value)
    return [{"step": (b + 1) * width, "mean_return": statistics.fmean(v)} for b, v in sorted(bins.items())]
