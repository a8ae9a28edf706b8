"""The site in a real browser: Debian's Chromium, headless, through Selenium and chromium-driver (render.browser).

Every page loads with no console error and no request leaving the machine; the typeset equations have a size; the
lesson pages' learning curves load, in the note column; a lesson page opens with its goals and ends with check
questions whose answers unfold, shows its loop as lines and its Try this as experiments, PPO's copies open and the
plumbing's folded until clicked; the diff pages open with the prose-only hunks hidden, the switch shows them; the
index's results are a table; at 1280 and 390 px no page scrolls sideways and no line of code is cut (it wraps).
Screenshots go to the test's folder (pytest --basetemp to keep them).

Without chromium and chromium-driver these tests are skipped, unless REQUIRE_BROWSER=1 (.ci/run sets it, after
installing both with apt-get): there a missing browser fails, so a green CI means the site rendered in one.
"""

import json
import os
import re
from pathlib import Path

import pytest

from course.lessons import LESSONS
from render import browser
from render.lesson import png_size
from tests.conftest import ROOT

if not browser.available():
    if os.environ.get("REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"REQUIRE_BROWSER=1 but no {browser.CHROMIUM} / {browser.DRIVER}: "
                           "apt-get install chromium chromium-driver")
    pytest.skip("no chromium / chromedriver (apt-get install chromium chromium-driver)", allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402  (selenium is only needed where the browser is)


@pytest.fixture(scope="module")
def driver():
    with browser.chromium(1280, 900) as d:
        yield d


def pages(site: Path) -> list[Path]:
    return sorted(site.glob("*.html")) + sorted((site / "lessons").glob("*.html")) + sorted(
        (site / "diffs").glob("*.html"))


def requests_made(d) -> list[str]:
    """The URLs requested since the log was last read, but for those of Chromium's own pages (a document at a
    chrome:// URL: Chromium 150's new-tab page, still loading its icons when the first page is asked for)."""
    urls = []
    for entry in d.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            if not message["params"].get("documentURL", "").startswith("chrome://"):
                urls.append(message["params"]["request"]["url"])
    return urls


def test_every_page_loads_cleanly_and_fetches_nothing_from_elsewhere(site, driver):
    for page in pages(site):
        driver.get_log("browser"), driver.get_log("performance")  # (empties both logs)
        browser.load(driver, page.as_uri())  # (fails if the page is still loading after 30 s)
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == [], f"{page.name}: {errors}"
        urls = requests_made(driver)
        assert urls, "the network log recorded nothing: the check would be empty"
        outside = [url for url in urls if not url.startswith(("file://", "data:"))]
        assert outside == [], f"{page.name} requested {outside}"


def test_equations_have_a_size_and_fonts(site, driver):
    browser.load(driver, (site / "lessons" / "ppo_cartpole.html").as_uri())
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    boxes = driver.find_elements(By.CSS_SELECTOR, "figure.eq .katex-html")
    assert len(boxes) >= 5
    for box in boxes:
        assert box.size["width"] > 50 and box.size["height"] > 10, box.size
    # KaTeX's own fonts, not a fallback: the main math font is loaded.
    loaded = driver.execute_script(
        "return document.fonts.ready.then(() => [...document.fonts].filter(f => f.status == 'loaded')"
        ".map(f => f.family))")
    assert any("KaTeX" in family for family in loaded), loaded


def test_the_learning_curves_load_beside_the_code(site, driver):
    """Each lesson's figures (course.lessons) are decoded at their size, and shown in the note, left of any code."""
    for lesson in LESSONS:
        browser.load(driver, (site / "lessons" / f"{lesson.module}.html").as_uri())
        images = driver.find_elements(By.CSS_SELECTOR, "figure.curve img")
        assert len(images) == len(lesson.figures) >= 1
        for image, figure in zip(images, lesson.figures):
            natural = driver.execute_script(
                "const i = arguments[0]; return i.decode().then(() => [i.naturalWidth, i.naturalHeight], "
                "() => [0, 0])", image)
            assert natural[0] > 0 and tuple(natural) == png_size(site / "raw" / figure.path), (figure.path, natural)
            assert image.is_displayed() and image.size["width"] > 200, (figure.path, image.size)
            note, src, shown = driver.execute_script(
                "const i = arguments[0], row = i.closest('section.row'); const r = e => e && e.getBoundingClientRect();"
                "return [r(i.closest('.note')), r(row.querySelector('.src')), r(i)]", image)
            assert note["left"] <= shown["left"] and shown["right"] <= note["right"], figure.path
            if src is not None:  # beside code: left of it (the module docstring's row has none once the imports fold)
                assert note["right"] <= src["left"], figure.path


def test_ppo_s_copies_are_open_and_the_plumbing_s_fold(site, driver):
    """PPO's own functions (GAE, the losses, the rollout) are read on the page, copies or not; a copy of the plumbing,
    below the fence, stays folded until clicked."""
    browser.load(driver, (site / "lessons" / "ppo_cartpole.html").as_uri())
    for target in ("common.ppo.compute_gae", "common.ppo.clipped_surrogate_loss"):
        block = driver.find_element(By.CSS_SELECTOR, f"details.copy[data-target='{target}']")
        line = block.find_elements(By.CSS_SELECTOR, "span.line")[0]
        assert block.get_attribute("open") is not None and line.is_displayed()
    driver.find_element(By.CSS_SELECTOR, "details.plumbing > summary").click()
    block = driver.find_element(By.CSS_SELECTOR, "details.copy[data-target='common.runs.RunLog']")
    inside = block.find_elements(By.CSS_SELECTOR, "span.line")[0]  # a line of its code
    assert not block.get_attribute("open") and not inside.is_displayed()
    block.find_element(By.TAG_NAME, "summary").click()
    assert block.get_attribute("open") is not None and inside.is_displayed()


def test_a_link_to_a_folded_line_opens_its_block(site, driver):
    lines = (site / "raw" / "ppo_cartpole.py").read_text().splitlines()
    line = next(n for n, text in enumerate(lines, start=1) if "def compute_gae" in text)
    browser.load(driver, (site / "lessons" / "ppo_cartpole.html").as_uri() + f"#L{line}")
    target = driver.find_element(By.ID, f"L{line}")
    assert target.is_displayed()
    assert driver.execute_script("const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && "
                                 "r.top < innerHeight", target)  # scrolled to


def test_the_switch_hides_prose_only_hunks_until_asked(site, driver):
    """A diff page opens on the code changes, the prose-only hunks hidden; the switch shows them, and hides them
    again."""
    browser.load(driver, (site / "diffs" / "ppo_cartpole--ppo_lunarlander_vec.html").as_uri())
    prose = driver.find_elements(By.CSS_SELECTOR, ".prose-only")
    code = driver.find_elements(By.CSS_SELECTOR, ".hunk:not(.prose-only)")
    assert prose and code
    assert not any(h.is_displayed() for h in prose) and any(h.is_displayed() for h in code)
    driver.find_element(By.CSS_SELECTOR, "label[for='hide-prose']").click()
    assert any(h.is_displayed() for h in prose)
    driver.find_element(By.CSS_SELECTOR, "label[for='hide-prose']").click()
    assert not any(h.is_displayed() for h in prose)
    assert any(h.is_displayed() for h in code)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.module)
def test_a_lesson_page_shows_the_loop_as_lines_and_try_this_as_experiments(site, driver, lesson):
    """The docstring's pseudocode keeps its lines and their indentation (a code block), and each "Try this"
    experiment is an item: its command, then the question to predict, the answer and what was measured, and where
    a recorded run of its setting showed one, the symptom's section of the debugging guide, a link."""
    from course.lessons import try_this

    _, experiments = try_this(__import__(lesson.module).__doc__)
    browser.load(driver, (site / "lessons" / f"{lesson.module}.html").as_uri())
    loop = driver.find_element(By.XPATH, "//p[strong[starts-with(., 'The loop')]]/following-sibling::*[1]")
    assert loop.tag_name in ("pre", "div") and "\n" in loop.get_attribute("textContent").strip()
    folded = driver.find_element(By.CSS_SELECTOR, "details.try-this")  # read once the code is: folded, a click away
    assert folded.get_attribute("open") is None
    folded.find_element(By.TAG_NAME, "summary").click()
    items = driver.find_elements(By.XPATH, "//p[strong[starts-with(., 'Try this')]]/following-sibling::ul[1]/li")
    assert [item.find_element(By.TAG_NAME, "code").text for item in items] == [e.command for e in experiments]
    for item, e in zip(items, experiments):
        assert [li.text.split(":")[0] for li in item.find_elements(By.CSS_SELECTOR, "ul li")] == \
            ["Predict", "Answer", "Measured"] + (["Symptom"] if e.symptom else [])
        if e.symptom:
            link = item.find_element(By.CSS_SELECTOR, "ul li:last-child a")
            assert link.get_attribute("href").endswith("/debugging.html#" + e.symptom.split("#")[1])


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.module)
def test_a_lesson_page_opens_with_its_goals_and_ends_with_check_questions(site, driver, lesson):
    """At the top: what the lesson teaches, what to read first (lesson 0, or the lesson it differs from and their
    diff), and a link to its loop's line; at the end, three check questions whose answers unfold on a click."""
    browser.load(driver, (site / "lessons" / f"{lesson.module}.html").as_uri())
    items = driver.find_elements(By.CSS_SELECTOR, "section.intro li")
    assert [i.text.split(":")[0] for i in items[:2]] == ["What this lesson teaches", "Read first"]
    teaches = __import__(lesson.module).__doc__.split("What this lesson teaches")[1].split("\n\n")[0]
    if "L^{" in teaches:  # the objective it names, typeset (its TeX in KaTeX's annotation), not left as L^{...}
        tex = [a.get_attribute("textContent") for a in items[0].find_elements(By.CSS_SELECTOR, ".katex annotation")]
        assert re.search(r"L\^\{[A-Z+]+\}", teaches).group(0) in tex and "L^{" not in items[0].text
    first = [a.get_attribute("href") for a in items[1].find_elements(By.TAG_NAME, "a")]
    expected = "lesson-0.html" if lesson.neighbour is None else f"lessons/{lesson.neighbour[:-3]}.html"
    assert first[0].endswith(expected) and all((site / Path(h[len(site.as_uri()) + 1:].split("#")[0])).is_file()
                                               for h in first)
    loop = items[2].find_element(By.CSS_SELECTOR, "a[href^='#L']").get_attribute("href").split("#")[1]
    assert "for iteration in range(" in driver.find_element(By.ID, loop).text
    answers = driver.find_elements(By.CSS_SELECTOR, "section.checks details")
    assert len(answers) == 3 and not any(a.get_attribute("open") for a in answers)
    inside = answers[0].find_element(By.TAG_NAME, "p")
    assert not inside.is_displayed()
    answers[0].find_element(By.TAG_NAME, "summary").click()
    assert inside.is_displayed()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.module)
def test_the_hyperparameters_are_a_table_in_the_note_column(site, driver, lesson):
    """Under the class Hyperparameters: each flag with its default in one line, then a folded table, a row per flag
    (flag, symbol, default, what it does, usual range), read from the dataclass, in the note."""
    import ast

    tree = ast.parse((site / "raw" / lesson.script).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Hyperparameters"]
    fields = [f"--{n.target.id.replace('_', '-')}" for n in cls.body if isinstance(n, ast.AnnAssign)]
    browser.load(driver, (site / "lessons" / f"{lesson.module}.html").as_uri())
    defaults = driver.find_elements(By.CSS_SELECTOR, ".note .hyper-table .hp code")  # one line: each flag, its default
    assert [d.text.split(" ")[0] for d in defaults] == fields and all(d.is_displayed() for d in defaults)
    driver.find_element(By.CSS_SELECTOR, ".note .hyper-table details > summary").click()  # the table: folded
    table = driver.find_element(By.CSS_SELECTOR, ".note .hyper-table table")
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert heads[:3] == ["flag", "symbol", "default"] and heads[3] == "what it does"
    assert [row.find_element(By.TAG_NAME, "code").text for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")] \
        == fields
    symbols = {row.find_elements(By.TAG_NAME, "td")[0].text: row.find_elements(By.TAG_NAME, "td")[1].text
               for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert symbols["--clip-coef"] == "epsilon"
    assert symbols.get("--gamma", "gamma") == "gamma" and ("--gamma" in symbols) == (lesson.script != "grpo_rlhf_tiny.py")
    note, code, shown = driver.execute_script(
        "const t = arguments[0]; const r = e => e && e.getBoundingClientRect();"
        "return [r(t.closest('.note')), r(t.closest('section.row').querySelector('.src')), r(t)]", table)
    assert note["left"] <= shown["left"] and shown["right"] <= note["right"] + 1
    if code is not None:  # beside code: left of it (the fields, the table's source, fold below it)
        assert note["right"] <= code["left"]


def test_the_index_shows_the_results_as_a_table(site, driver):
    """README's results are a Markdown table after a paragraph and a marker line: on the index they are a table, a
    row a recipe, not a paragraph of | and ---."""
    browser.load(driver, (site / "index.html").as_uri())
    section = driver.find_element(By.XPATH, "//h2[@id='results-at-a-glance']/following-sibling::div[1]")
    rows = section.find_elements(By.CSS_SELECTOR, "table tr")
    assert len(rows) >= 10 and rows[0].find_elements(By.TAG_NAME, "th")
    assert "|---|" not in section.text


@pytest.mark.parametrize("width", [1280, 390])
def test_no_sideways_scroll_of_the_page(site, width, tmp_path):
    with browser.chromium(width, 900) as d:
        for page in pages(site):
            browser.load(d, page.as_uri())
            d.execute_script("document.querySelectorAll('details').forEach(x => x.open = true)")
            scroll, client = d.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert scroll <= client, f"{page.name} at {width} px: the page is {scroll} px wide"
            if page.name in ("ppo_cartpole.html", "ppo_cartpole--ppo_lunarlander_vec.html", "index.html"):
                d.execute_script("window.scrollTo(0, 0)")
                d.save_screenshot(str(tmp_path / f"{page.stem}-{width}.png"))
        # No line of code is cut: a long line wraps inside its box (its continuation indented past the line
        # number), so no box of code is wider than what it shows, and at 390 px some line takes two rows.
        for lesson in LESSONS:
            browser.load(d, (site / "lessons" / f"{lesson.module}.html").as_uri())
            d.execute_script("document.querySelectorAll('details').forEach(x => x.open = true)")
            cut = d.execute_script(
                "return [...document.querySelectorAll('pre.code, .note pre')]"
                ".filter(p => p.scrollWidth > p.clientWidth).map(p => p.textContent.slice(0, 60))")
            assert not cut, f"{lesson.script} at {width} px: lines cut in {cut[:3]}"
        if width == 390:
            wrapped = d.execute_script(
                "const l = [...document.querySelectorAll('pre.code .line')];"
                "const h = l[0].getBoundingClientRect().height;"
                "return l.some(x => x.getBoundingClientRect().height > 1.5 * h)")
            assert wrapped


# The words a reader passes on the way down a page, to an element: each visible text's words (a token with a letter
# or digit), a formula counted as the words of its TeX, the line numbers, the site's header and the page's menu out.
WORDS_BEFORE = """
const target = document.getElementById(arguments[0]);
const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
const count = text => text.split(/\\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length;
let words = 0, node;
while ((node = walker.nextNode())) {
  if (target.contains(node) || (target.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING)) break;
  const el = node.parentElement;
  if (el.closest('nav.parts') || el.closest('.ln') || el.closest('.katex-html')) continue;
  if (el.closest('.katex-mathml')) {
    if (el.tagName.toLowerCase() === 'annotation' && el.closest('.katex').checkVisibility()) words += count(node.textContent);
    continue;
  }
  if (el.checkVisibility()) words += count(node.textContent);
}
return words;
"""


def test_lesson_1_reaches_its_first_update_within_2000_words(site, driver):
    """Issue 65: a learner on the site reads PPO's first optimizer step within about 10 minutes (2,000 words, code
    and prose): the imports, the Hyperparameters' fields (their table shows them), Try this, Usage and References are
    folded on the way, and each equation is typeset once."""
    import ast

    source = (ROOT / "ppo_cartpole.py").read_text()
    lines = source.splitlines()
    train = next(node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and node.name == "train")
    step = next(n for n in range(train.lineno, train.end_lineno + 1) if "optimizer.step()" in lines[n - 1])
    browser.load(driver, (site / "lessons" / "ppo_cartpole.html").as_uri())
    words = driver.execute_script(WORDS_BEFORE, f"L{step}")
    assert 1000 < words <= 2000, words
    imports = [node.lineno for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert imports and not any(driver.find_element(By.ID, f"L{n}").is_displayed() for n in imports)
