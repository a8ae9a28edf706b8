"""The box on reading a "Measured" line, at the top of the first lesson's "Try this" (issue 65): the statistics
behind the line in plain words, as benchmarks/core/inference.py computes them; the other lessons' "Try this" link
to it. Its figures are the study's own (benchmarks.ablations: the runs a side, the size of the family of
comparisons, the lesson's own Measured lines as examples) and the procedure's (inference.LEVEL, ALPHA, POWER), so
that the box cannot say what the code does not do."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from benchmarks import ablations
from benchmarks.core import inference
from render.html import esc

BOX_ID = "reading-measured"
STATISTICS = "../benchmarks.html#what-each-detail-buys-the-ablation-studies"  # "The statistics", in that section


def percent(x: float) -> str:
    return f"{100 * x:g}%"


def measured_box(script: str, results: Path = ablations.RESULTS) -> str:
    """The box for `script`'s Try this (a lesson of ablations.TRY_THIS): its study's seeds and family, and its first
    Measured line and first "not detected" one as the examples."""
    study, settings = ablations.TRY_THIS[script]
    metric = ablations.STUDIES[study].metrics[0]
    found = ablations.read_effects(results)
    measured = dict(ablations.try_this(script, found))  # command -> its Measured line, as the docstring has it
    effects = [next(e for e in found if e["study"] == study and e["setting"] == name and e["metric"] == metric.name)
               for name in settings]
    commands = list(measured)
    first = effects[0]
    quiet = next(((c, e) for c, e in zip(commands, effects) if e["verdict"] == "not detected" and e["detectable"]),
                 None)
    power = Fraction(inference.POWER).limit_denominator(10)
    items = [
        "<li><strong>One run proves little.</strong> Two runs of one command with different <code>--seed</code> "
        f"learn at different speeds. So the study ran each setting {first['runs']} times and the lesson's defaults "
        f"{first['default_runs']} times, each with its own seed, and a Measured line's first number is the "
        "setting's mean score minus the defaults' mean.</li>",
        f"<li><strong>The {percent(inference.LEVEL)} interval</strong>, the <code>[low, high]</code> after it, is "
        "where the true difference of the two means likely lies: intervals made this way hold it "
        f"{round(100 * inference.LEVEL)} times in 100. <code>{esc(measured[commands[0]])}</code> "
        f"(<code>{esc(commands[0])}</code>): the setting's mean is {ablations.number(abs(float(first['effect'])), metric)} "
        f"{'below' if float(first['effect']) < 0 else 'above'} the defaults' mean, and the true difference likely between "
        f"{ablations.number(float(first['low']), metric)} and {ablations.number(float(first['high']), metric)}.</li>",
        "<li><strong>&ldquo;hurts&rdquo; or &ldquo;helps&rdquo;</strong> says the difference is too large to be the "
        f"seeds' luck, counting that the study compared {first['family']} settings with the same defaults: the more "
        "comparisons, the more chances that one of them looks different by luck alone, so each test's bar is raised "
        f"(Holm's correction) until the chance of even one false &ldquo;hurts&rdquo; or &ldquo;helps&rdquo; among "
        f"the {first['family']} is at most {percent(inference.ALPHA)}. An interval that misses 0 can therefore still read "
        "&ldquo;not detected&rdquo;.</li>",
    ]
    if quiet:
        command, e = quiet
        items.append(
            "<li><strong>&ldquo;not detected&rdquo; is not &ldquo;no effect&rdquo;.</strong> "
            f"<code>{esc(measured[command])}</code> (<code>{esc(command)}</code>): the study would have caught a true "
            f"difference of about {ablations.number(float(e['detectable']), metric)} or more ({power.numerator} "
            f"times in {power.denominator}); a smaller one may well be there.</li>")
    return (f'<aside class="box added" id="{BOX_ID}"><p><strong>Reading &ldquo;Measured&rdquo;</strong></p>'
            f'<ul>{"".join(items)}</ul><p>The procedure: <a href="../raw/benchmarks/core/inference.py">'
            f'<code>benchmarks/core/inference.py</code></a>; the whole record: <a href="{STATISTICS}">benchmarks/README.md'
            "</a>, &ldquo;The statistics&rdquo;.</p></aside>")


def measured_link(script: str) -> str:
    """For the other lessons' Try this: one line, a link to the box on `script`'s page."""
    return (f'<p class="added measured-link">How to read a &ldquo;Measured&rdquo; line: '
            f'<a href="{script[:-3]}.html#{BOX_ID}">the box in {script}&rsquo;s Try this</a>.</p>')
