"""The equations the lessons cite, in LaTeX, and where a comment cites them.

The scripts keep their math in plain text (the editor is the first way to read them); the site typesets it
beside the comment that cites it. One table holds every equation: the paper's (Schulman et al. 2017,
arXiv:1707.06347), numbered as there, and GAE's (Schulman et al. 2016, arXiv:1506.02438, section 3).

They are typeset once per build by KaTeX under Node.js (render/katex/render.js): the page gets KaTeX's HTML and
its stylesheet and fonts, vendored into the site's assets, so reading a page fetches nothing and runs no math
JavaScript. Chosen over MathML from latex2mathml, which in Chromium misplaced the hats and did not stretch the
brackets of eq. 7.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

KATEX = Path(__file__).resolve().parent / "katex"


@dataclass(frozen=True)
class Equation:
    key: str  # "7", ..., "GAE"
    label: str  # as the box names it
    tex: str


EQUATIONS = {eq.key: eq for eq in [
    Equation("6", "paper eq. 6", r"L^{CPI}(\theta) = \hat{\mathbb{E}}_t\!\left[\frac{\pi_\theta(a_t \mid s_t)}"
             r"{\pi_{\theta_\text{old}}(a_t \mid s_t)}\,\hat{A}_t\right] = \hat{\mathbb{E}}_t\!\left[r_t(\theta)\,"
             r"\hat{A}_t\right]"),
    Equation("7", "paper eq. 7", r"L^{CLIP}(\theta) = \hat{\mathbb{E}}_t\!\left[\min\!\left(r_t(\theta)\,\hat{A}_t,\;"
             r"\operatorname{clip}\!\left(r_t(\theta),\,1-\epsilon,\,1+\epsilon\right)\hat{A}_t\right)\right]"),
    Equation("8", "paper eq. 8", r"L^{KLPEN}(\theta) = \hat{\mathbb{E}}_t\!\left[\frac{\pi_\theta(a_t \mid s_t)}"
             r"{\pi_{\theta_\text{old}}(a_t \mid s_t)}\,\hat{A}_t - \beta\,\mathrm{KL}\!\left[\pi_{\theta_\text{old}}"
             r"(\cdot \mid s_t),\,\pi_\theta(\cdot \mid s_t)\right]\right]"),
    Equation("9", "paper eq. 9", r"L^{CLIP+VF+S}_t(\theta) = \hat{\mathbb{E}}_t\!\left[L^{CLIP}_t(\theta) - c_1\,"
             r"L^{VF}_t(\theta) + c_2\,S[\pi_\theta](s_t)\right],\quad L^{VF}_t = \left(V_\theta(s_t) - "
             r"V^\text{targ}_t\right)^2"),
    Equation("11", "paper eq. 11", r"\hat{A}_t = \delta_t + (\gamma\lambda)\,\delta_{t+1} + \cdots + "
             r"(\gamma\lambda)^{T-t-1}\,\delta_{T-1}"),  # the paper prints T-t+1, a typo: delta_{T-1} is
    # T-1-t steps of gamma lambda after delta_t
    Equation("12", "paper eq. 12", r"\delta_t = r_t + \gamma\,V(s_{t+1}) - V(s_t)"),
    Equation("GAE", "GAE, section 3", r"\hat{A}_t^{\mathrm{GAE}(\gamma,\lambda)} = \sum_{l=0}^{\infty}"
             r"(\gamma\lambda)^l\,\delta^V_{t+l}"),
]}

# "eq. 7", "eqs. 7, 9, 11, 12", "eqs. 7-9", "eq. 9's": the numbers a comment cites.
_CITE = re.compile(r"\beqs?\.\s*((?:\d+\s*(?:[-,]|and)?\s*)+)")
_GAE = re.compile(r"Generalized Advantage Estimation|\[GAE\]")


def cited(text: str) -> list[str]:
    """The keys of EQUATIONS that `text` cites, in the table's order: the paper's equations by number (a range
    "7-9" cites 7, 8 and 9), GAE's where the text names it ("Generalized Advantage Estimation" or "[GAE]")."""
    numbers = set()
    for match in _CITE.finditer(text):
        for part in re.split(r",|and", match.group(1)):
            part = part.strip()
            if "-" in part:
                low, high = (int(x) for x in part.split("-")[:2] if x.strip())
                numbers.update(str(n) for n in range(low, high + 1))
            elif part.isdigit():
                numbers.add(part)
    if _GAE.search(text):
        numbers.add("GAE")
    return [key for key in EQUATIONS if key in numbers]


# The objectives a lesson's opening box names in plain text ("the paper's L^{CLIP+VF+S}"), typeset inline there.
_OBJECTIVE = re.compile(r"L\^(?:\{([A-Z+]+)\}|([A-Z]+)\b)")


def objective_tex(name: str) -> str:
    """"CLIP+VF+S" -> the LaTeX of L^{CLIP+VF+S}, as the equations' table writes it."""
    return f"L^{{{name}}}"


def objectives(text: str) -> list[str]:
    """The objectives `text` names as L^{...} or L^NAME: ["CLIP+VF+S"], in order, once each."""
    return list(dict.fromkeys(m.group(1) or m.group(2) for m in _OBJECTIVE.finditer(text)))


def typeset_objectives(html: str, inline: dict[str, str]) -> str:
    """Each L^{...} of `html` (text, no tags inside it) replaced by its inline KaTeX ({name: HTML}); a name with no
    HTML stays text."""
    return _OBJECTIVE.sub(lambda m: inline.get(m.group(1) or m.group(2), m.group(0)), html)


def link_citations(html: str, keys: set[str], href=lambda key: f"#eq-{key}") -> str:
    """Every citation of an equation in `keys` in `html` (a Markdown note's or a highlighted line's: text and
    tags, no citation inside a tag) made a link to its box: "eq. 7" whole, the numbers of "eqs. 7, 9, 11, 12" one
    by one, "[GAE]" and "Generalized Advantage Estimation" to GAE's. Its text stays the same."""

    def link(key: str, text: str) -> str:
        return f'<a class="eq-link" href="{href(key)}">{text}</a>' if key in keys else text

    def numbers(match: re.Match) -> str:
        found = re.findall(r"\d+", match.group(1))
        if len(found) == 1:  # "eq. 7" linked whole (what the pattern took after it, ", " or " and ", stays out)
            text = re.match(r"eqs?\.\s*\d+", match.group(0)).group(0)
            return link(found[0], text) + match.group(0)[len(text):]
        head = match.group(0)[:match.start(1) - match.start(0)]
        return head + re.sub(r"\d+", lambda d: link(d.group(0), d.group(0)), match.group(1))

    html = _CITE.sub(numbers, html)
    return _GAE.sub(lambda m: link("GAE", m.group(0)), html)


def install_katex() -> None:
    """KaTeX as render/katex/package-lock.json pins it, into render/katex/node_modules (ignored by git), once."""
    if (KATEX / "node_modules" / "katex" / "dist").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("KaTeX is not installed and there is no npm to install it: install Node.js and npm")
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=KATEX, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"npm ci in {KATEX} failed: {(done.stderr.strip().splitlines() or [''])[-1]}")


def typeset(names: list[str] = ()) -> dict[str, str]:
    """{key: KaTeX's HTML} for every equation, and {"inline:" + name: its inline HTML} for each objective of `names`
    ("CLIP+VF+S", see objectives()), typeset by Node.js in one call."""
    tex = {key: equation.tex for key, equation in EQUATIONS.items()}
    tex.update({f"inline:{name}": objective_tex(name) for name in names})
    return typeset_tex(tex)


def typeset_tex(tex: dict[str, str]) -> dict[str, str]:
    """{key: KaTeX's HTML} for {key: LaTeX}, in one call of Node.js: display math, but for the keys that start with
    "inline:"."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("the site's math is typeset by KaTeX under Node.js: install Node.js (node) first")
    install_katex()
    done = subprocess.run([node, str(KATEX / "render.js")], input=json.dumps(tex), capture_output=True, text=True,
                          cwd=KATEX)
    if done.returncode != 0:
        raise RuntimeError(f"KaTeX failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")
    return json.loads(done.stdout)


def vendor(assets: Path) -> None:
    """KaTeX's stylesheet and its woff2 fonts into assets/katex/ (the stylesheet's woff and ttf fallbacks
    removed: every browser that runs the site reads woff2, and nothing it names is missing)."""
    install_katex()
    dist = KATEX / "node_modules" / "katex" / "dist"
    target = assets / "katex"
    (target / "fonts").mkdir(parents=True, exist_ok=True)
    css = (dist / "katex.min.css").read_text()
    css = re.sub(r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)', "", css)
    (target / "katex.min.css").write_text(css)
    for font in sorted((dist / "fonts").glob("*.woff2")):
        shutil.copyfile(font, target / "fonts" / font.name)
