#!/usr/bin/python3
"""Open the built course site in headless Chromium and check what a student would see.

    /usr/bin/python3 tools/test_site.py --site build-tests-site/build/html --screenshot build-tests/site-screenshot.png

Run by tools/run-tests.sh after the README's site command (in a fresh copy of the tree). Drives
Debian's chromium through chromium-driver with Debian's python3-selenium, and checks that:
  1. the landing page renders (title, set-up commands, links to every chapter page);
  2. chapter 00 shows real program output (the chapter binary ran during the build), a plot
     image that actually loaded, formulas typeset by the vendored MathJax, and a collapsed
     solution that opens;
  3. clicking a quiz answer shows its feedback and a score, and the score survives a reload
     (localStorage);
  4. nothing came from the network (every script, stylesheet and image is a local file) and the
     browser console has no errors;
  5. at 1280 pixels, no code or output block of a chapter, the FAQ or the limitations page needs a
     scroll bar unless one of its lines is longer than 110 characters (the article takes the width
     furo's hidden contents leave);
  6. at 1280 and 1600 pixels, no page is wider than the window (no line ends under the scroll bar);
  7. no page has a table of contents that furo paints over in red as an error;
  8. no page shows the build machine's own paths (program output names the embedded model by its
     folder's name, not by where this checkout happens to live).
Saves a full-page screenshot of chapter 00 (after the quiz click) to --screenshot.
Prints one line per check; exits 1 if any failed.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-dev-shm-usage", "--window-size=1280,1000",
                  # Offline check: any host name fails to resolve, so a CDN load would show up as
                  # a console error below.
                  "--host-resolver-rules=MAP * ~NOTFOUND"]


class Checks:
    def __init__(self):
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> bool:
        print(f"  {'ok  ' if ok else 'FAIL'}  {what}" + ("" if ok or not detail else f"\n        {detail}"))
        self.failed += 0 if ok else 1
        return ok


def find_binary(names: list, what: str) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    sys.exit(f"test_site: {what} not found (tried {', '.join(names)}): run tools/install-deps.sh --docs")


def start_browser(profile: str) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = find_binary(["chromium", "chromium-browser"], "Chromium")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(find_binary(["chromedriver"], "chromium-driver (chromedriver)"))
    return webdriver.Chrome(service=service, options=options)


def wait_for(driver, condition, seconds=20):
    try:
        return WebDriverWait(driver, seconds).until(lambda d: condition(d))
    except TimeoutException:
        return None


def scroll_to(driver, element) -> None:
    # behavior "instant": the theme scrolls smoothly, and a click during the animation misses.
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'});", element)


def console_errors(driver) -> list:
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def remote_resources(driver) -> list:
    """Scripts, stylesheets and images that do not come from local files."""
    return driver.execute_script("""
        const urls = [];
        document.querySelectorAll('script[src], link[rel=stylesheet][href], img[src]').forEach(e => {
            urls.push(e.src || e.href);
        });
        performance.getEntriesByType('resource').forEach(r => urls.push(r.name));
        return urls.filter(u => !u.startsWith('file:') && !u.startsWith('data:') && !u.startsWith('blob:'));
    """)


def page_url(site: str, page: str) -> str:
    return "file://" + os.path.abspath(os.path.join(site, page))


def check_landing(c: Checks, driver, site: str, screenshot: str) -> None:
    print("landing page (index.html):")
    driver.get(page_url(site, "index.html"))
    h1 = driver.find_elements(By.TAG_NAME, "h1")
    c.check(bool(h1) and "decodebook" in h1[0].text, "renders its title", h1[0].text if h1 else "no <h1>")
    code = " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, "div.highlight pre"))
    c.check("tools/install-deps.sh" in code and "tools/run-tests.sh" in code,
            "shows the README's two set-up commands", code[:200])
    chapters = sorted(os.path.basename(p) for p in os.listdir(os.path.join(site, "chapters")) if p.endswith(".html"))
    links = {os.path.basename(a.get_attribute("href") or "").split("#")[0]
             for a in driver.find_elements(By.CSS_SELECTOR, "article a, .sidebar-tree a")}
    c.check(bool(chapters) and all(ch in links for ch in chapters), f"links every chapter page ({len(chapters)})",
            f"pages {chapters}, links {sorted(links)}")
    c.check(not remote_resources(driver), "loads nothing from the network", str(remote_resources(driver)))
    errors = console_errors(driver)
    c.check(not errors, "no console errors", "\n        ".join(errors))


def check_chapter(c: Checks, driver, site: str, screenshot: str) -> None:
    print("chapter page (chapters/00-naive-loop.html):")
    driver.get(page_url(site, "chapters/00-naive-loop.html"))
    outputs = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "div.highlight-text pre")]
    real = [o for o in outputs if o.startswith("$ ./chapter-00") and "--- end (" in o and "Cost of one naive step" in o]
    c.check(bool(real), "shows chapter-00's real output (prompt, continuation, cost table)",
            f"{len(outputs)} output blocks, first: {outputs[0][:120] if outputs else ''!r}")
    images = driver.find_elements(By.CSS_SELECTOR, "img[src*='chapter00_cost']")
    loaded = images and driver.execute_script(
        "const i = arguments[0]; return i.complete && i.naturalWidth > 200 && i.naturalHeight > 100;", images[0])
    c.check(bool(loaded), "shows the per-step cost plot, and the image loaded")
    math = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "mjx-container svg"))
    c.check(bool(math), "typesets the formulas with the vendored MathJax")
    includes = driver.find_elements(By.CSS_SELECTOR, "div.literal-block-wrapper")
    captions = " ".join(e.text.split("\n")[0] for e in includes)
    c.check("chapters/00-naive-loop/run.cpp" in captions and "(your stub)" in captions,
            "includes library code and the exercise stub from the sources", captions[:200])

    solution = driver.find_elements(By.CSS_SELECTOR, "details.db-solution")
    if c.check(bool(solution), "has a collapsed worked solution"):
        details = solution[0]
        closed = details.get_attribute("open") is None
        scroll_to(driver, details)
        details.find_element(By.TAG_NAME, "summary").click()
        shown = wait_for(driver, lambda d: details.get_attribute("open") is not None and
                         "solutions/" in details.text, 5)
        c.check(closed and bool(shown), "the solution is hidden until 'Show solution' is clicked")

    questions = driver.find_elements(By.CSS_SELECTOR, ".quiz .quiz-question")
    if c.check(len(questions) >= 2, f"has a quiz ({len(questions)} questions)"):
        q = questions[0]
        correct = q.get_attribute("data-correct")
        wrong = next(b for b in q.find_elements(By.CSS_SELECTOR, ".quiz-answer")
                     if b.get_attribute("data-answer") != correct)
        scroll_to(driver, q)
        wrong.click()
        feedback = q.find_element(By.CSS_SELECTOR, f".quiz-feedback[data-answer='{wrong.get_attribute('data-answer')}']")
        c.check(feedback.is_displayed() and len(feedback.text) > 10, "a wrong answer shows its feedback",
                feedback.text)
        c.check("quiz-wrong" in wrong.get_attribute("class") and "Not quite" in q.find_element(
            By.CSS_SELECTOR, ".quiz-result").text, "and is marked wrong")
        right = q.find_element(By.CSS_SELECTOR, f".quiz-answer[data-answer='{correct}']")
        right.click()
        c.check("quiz-right" in right.get_attribute("class") and
                q.find_element(By.CSS_SELECTOR, ".quiz-result").text.startswith("Correct"),
                "the right answer is marked correct")
        score = driver.find_element(By.CSS_SELECTOR, ".quiz-score-text").text
        c.check(score.startswith("Score: 0 of"), "the score counts the first answer", score)
        time.sleep(0.3)
        driver.set_window_size(1280, driver.execute_script("return document.documentElement.scrollHeight") + 100)
        driver.save_screenshot(screenshot)
        driver.set_window_size(1280, 1000)
        driver.refresh()
        again = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".quiz-score-text").text, 5) or ""
        c.check(bool(score) and again == score, "the score survives a reload (localStorage)", f"{score!r} -> {again!r}")
        reset = driver.find_element(By.CSS_SELECTOR, ".quiz-reset")
        scroll_to(driver, reset)
        reset.click()
        c.check(not driver.find_elements(By.CSS_SELECTOR, ".quiz-answer.quiz-chosen"), "'Start over' clears it")
    else:
        driver.save_screenshot(screenshot)
    c.check(not remote_resources(driver), "loads nothing from the network", str(remote_resources(driver)))
    errors = console_errors(driver)
    c.check(not errors, "no console errors", "\n        ".join(errors))
    c.check(os.path.getsize(screenshot) > 10000, f"screenshot saved: {screenshot}")


# The pages of program output beside the chapters (docs/faq.rst, docs/limitations.rst).
PROSE_PAGES = ["faq.html", "limitations.html"]


def check_wide_blocks(c: Checks, driver, site: str) -> None:
    """Every chapter page (and the FAQ and limitations) at 1280 px: blocks that scroll, and whether
    a long line explains it."""
    driver.set_window_size(1280, 1000)
    chapters = sorted("chapters/" + p for p in os.listdir(os.path.join(site, "chapters")) if p.endswith(".html"))
    chapters += [p for p in PROSE_PAGES if os.path.isfile(os.path.join(site, p))]
    clipped = []
    for page in chapters:
        driver.get(page_url(site, page))
        widths = driver.execute_script(
            "return Array.from(document.querySelectorAll('div.highlight pre'))"
            ".filter(p => p.scrollWidth > p.clientWidth + 2)"
            ".map(p => Math.max(...p.textContent.split('\\n').map(l => l.length)));")
        clipped += [f"{page} ({w} columns)" for w in widths if w <= 110]
    c.check(bool(chapters) and not clipped,
            f"at 1280 px no code or output block of lines up to 110 columns scrolls ({len(chapters)} pages)",
            ", ".join(clipped[:10]))


def check_no_overflow(c: Checks, driver, site: str) -> None:
    """Every page at 1280 and 1600 px: nothing wider than the window (no line ends under the scroll bar)."""
    pages = ["index.html"] + [p for p in PROSE_PAGES if os.path.isfile(os.path.join(site, p))] + sorted(
        "chapters/" + p for p in os.listdir(os.path.join(site, "chapters")) if p.endswith(".html"))
    for width in (1280, 1600):
        driver.set_window_size(width, 1000)
        wide = []
        for page in pages:
            driver.get(page_url(site, page))
            extra = driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
            if extra > 1:
                wide.append(f"{page} (+{extra} px)")
        c.check(not wide, f"at {width} px no page is wider than the window ({len(pages)} pages)", ", ".join(wide[:10]))
    driver.set_window_size(1280, 1000)


def check_no_theme_errors(c: Checks, driver, site: str) -> None:
    """Every page: no box the theme draws over a mistake. Furo paints an `.. contents::` block red
    with "ERROR: Adding a table of contents ..." (a CSS ::before, so no build warning catches it)."""
    pages = ["index.html"] + [p for p in PROSE_PAGES if os.path.isfile(os.path.join(site, p))] + sorted(
        "chapters/" + p for p in os.listdir(os.path.join(site, "chapters")) if p.endswith(".html"))
    bad = []
    for page in pages:
        driver.get(page_url(site, page))
        if driver.find_elements(By.CSS_SELECTOR,
                                ".contents:not(.this-will-duplicate-information-and-it-is-still-useful-here)"):
            bad.append(page)
    c.check(not bad, f"no page has a table of contents the theme marks as an error ({len(pages)} pages)",
            ", ".join(bad))


def check_no_local_paths(c: Checks, site: str) -> None:
    """Every built page, searched for this checkout's absolute path (no browser needed)."""
    checkout = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    found = []
    for folder, _, files in os.walk(site):
        for name in files:
            if name.endswith((".html", ".txt")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    if checkout in f.read():
                        found.append(os.path.relpath(path, site))
    c.check(not found, f"no page shows this checkout's path ({checkout})", ", ".join(sorted(found)[:10]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", required=True, help="the built site (the folder with index.html)")
    parser.add_argument("--screenshot", required=True, help="where to save a full-page screenshot of chapter 00")
    args = parser.parse_args()
    if not os.path.isfile(os.path.join(args.site, "index.html")):
        sys.exit(f"test_site: no index.html in {args.site}: build the site first (cmake --build <build> --target docs)")

    start = time.monotonic()
    c = Checks()
    check_no_local_paths(c, args.site)
    with tempfile.TemporaryDirectory(prefix="decodebook-chromium-") as profile:  # a fresh profile each run
        try:
            driver = start_browser(profile)
        except WebDriverException as e:
            sys.exit(f"test_site: could not start headless Chromium: {e.msg}")
        try:
            for check in (check_landing, check_chapter, lambda c, d, s, _: check_wide_blocks(c, d, s),
                          lambda c, d, s, _: check_no_overflow(c, d, s),
                          lambda c, d, s, _: check_no_theme_errors(c, d, s)):
                try:
                    check(c, driver, args.site, args.screenshot)
                except WebDriverException as e:  # a missing element or a failed click: report, go on
                    c.check(False, f"{check.__name__} stopped early", e.msg)
        finally:
            driver.quit()
    print(f"site checks: {'all passed' if not c.failed else f'{c.failed} failed'} "
          f"({time.monotonic() - start:.1f} s)")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
