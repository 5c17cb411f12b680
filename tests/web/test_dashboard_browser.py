"""The dashboard in a real browser: Debian's headless Chromium driven through Selenium (the
system's chromium and chromium-driver, so nothing is downloaded at test time), against a
real server on loopback. One browser for the module; the tests run in order, as one person
would: sign in, look around, submit, watch, compare, sign out."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import missing
from tests.liveserver import FAST, wait_until
from tests.services.conftest import ROOT
from trainyard.domain.prediction import PredictedStart, describe
from trainyard.domain.states import JobState
from trainyard.server.assembly import ServerConfig, TrainyardServer
from trainyard.store.predictions import PredictionStore

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 30
SCRIPT_TEXT = "<script>alert(1)</script>"
IMG_TEXT = "<img src=x onerror=alert(2)>"


def curve(digit: int) -> str:
    """A command that writes six loss points (0.9D down to 0.4D, D the digit) as JSON lines
    to $METRICS_PATH, a log line each, half a second apart, then a model file."""
    return ('for s in 1 2 3 4 5 6; do echo "{\\"step\\": $s, \\"loss\\": 0.$((10 - s))'
            f'{digit}}}" >> "$METRICS_PATH"; echo "step $s"; sleep 0.5; done; '
            'mkdir -p "$MODEL_SAVE_PATH"; echo weights > "$MODEL_SAVE_PATH/weights.txt"')


# One queue that runs one job at a time, so a second job there waits; a team with a quota.
POLICY = """
max_running = 4
[pools.local]
executor = "local"
cpus = 8
memory_mb = 16384
max_jobs = 4
[queues.default]
pools = ["local"]
[queues.single]
pools = ["local"]
max_running = 1
[teams.lab]
members = ["root"]
budget = { cpu_hours = 1000, period = "7d" }
[teams.lab.quota.local]
cpus = 4
memory_mb = 8192
borrow_cpus = 2
"""

webdriver: Any = None
try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
    from selenium.webdriver import Chrome
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:  # reported by the fixture: skipped locally, failed under CI
    pass


@dataclass
class Site:
    server: TrainyardServer
    base: str  # http://127.0.0.1:PORT
    token: str
    jobs: dict[str, str]  # what the tests share: a name -> its job id

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + "/api/v1" + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("dashboard")
    (tmp / "policy.toml").write_text(POLICY)
    srv = TrainyardServer(ServerConfig(data_dir=tmp / "data", port=0, http_port=0,
                                       policy_file=tmp / "policy.toml", tracker=FAST))
    srv.access.bootstrap("root")
    token = srv.access.create_token(ROOT, "root", expires_in=0, read_only=False).token
    srv.start()
    try:
        yield Site(srv, f"http://127.0.0.1:{srv.http_port}", token, {})
    finally:
        srv.stop(grace=0)


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Chrome]:
    """Started after the server and quit before it stops, so no stream is cut off."""
    if webdriver is None:
        missing("selenium")
    found = {path: path if Path(path).exists() else shutil.which(Path(path).name)
             for path in (CHROMIUM, CHROMEDRIVER)}
    for path, where in found.items():
        if where is None:
            missing(f"{path} (Debian's chromium and chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(found[CHROMIUM])
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--disable-extensions", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(found[CHROMEDRIVER])), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser: Chrome, site: Site, request: pytest.FixtureRequest,
         tmp_path: Path) -> Iterator[WebDriver]:
    """The browser; a test that fails leaves a screenshot of what it saw. The page's console
    must stay free of errors (a script error, a refused inline script or style), answers of
    4xx aside, which the tests provoke."""
    yield browser
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        shot = tmp_path / f"{request.node.name}.png"
        browser.save_screenshot(str(shot))
        print(f"screenshot of the failed page: {shot}")
        return
    console = browser.get_log("browser")  # type: ignore[no-untyped-call]
    errors = [entry["message"] for entry in console if entry["level"] == "SEVERE"
              and not re.search(r"the server responded with a status of 4\d\d", entry["message"])]
    assert errors == []


def wait(driver: WebDriver, check: Callable[[WebDriver], Any], what: str) -> Any:
    """Until `check(driver)` is truthy; an element a live page redrew meanwhile is looked up
    again."""
    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1,
                         ignored_exceptions=[StaleElementReferenceException]).until(
        check, message=f"timed out waiting for {what}")


def shown(driver: WebDriver, css: str) -> WebElement:
    def visible(d: WebDriver) -> WebElement | None:
        return next((e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()),
                    None)
    element: WebElement = wait(driver, visible, css)
    return element


def click(driver: WebDriver, css: str) -> None:
    def clicked(d: WebDriver) -> bool:
        shown(d, css).click()
        return True
    wait(driver, clicked, f"a click on {css}")


def text_of(driver: WebDriver, css: str) -> str:
    """The element's text; empty while it is missing or being redrawn."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def no_alert(driver: WebDriver) -> None:
    try:
        alert = driver.switch_to.alert
    except NoAlertPresentException:
        return
    text = alert.text
    alert.dismiss()
    raise AssertionError(f"a script ran: alert({text!r})")


def submit_from_form(driver: WebDriver, site: Site, name: str, command: str,
                     hyperparameters: str = "", labels: str = "") -> None:
    driver.get(site.base + "/#/jobs")
    shown(driver, "#submit-name").send_keys(name)
    driver.find_element(By.ID, "submit-command").send_keys(command)
    if hyperparameters:
        driver.find_element(By.ID, "submit-hyperparameters").send_keys(hyperparameters)
    if labels:
        driver.find_element(By.ID, "submit-labels").send_keys(labels)
    driver.find_element(By.ID, "submit-button").click()


def job_id_in_url(driver: WebDriver) -> str:
    return str(wait(driver, lambda d: d.current_url.split("#/jobs/")[1]
                    if "#/jobs/" in d.current_url else None, "the job's page"))


def test_sign_in_with_a_token(page: WebDriver, site: Site) -> None:
    page.get(site.base + "/")
    token = shown(page, "#signin #token")
    token.send_keys("ty_not_a_real_token")
    page.find_element(By.CSS_SELECTOR, "#signin button[type=submit]").click()
    wait(page, lambda d: text_of(d, "#signin-error"), "the refusal of a wrong token")
    token.clear()
    token.send_keys(site.token)
    page.find_element(By.CSS_SELECTOR, "#signin button[type=submit]").click()
    assert shown(page, "#who").text == "root"
    cookies = {c["name"]: c for c in page.get_cookies()}
    assert cookies["trainyard_session"]["httpOnly"] is True
    assert cookies["trainyard_session"]["sameSite"] == "Strict"
    assert "trainyard_session" not in page.execute_script("return document.cookie")


def heading_is(heading: str) -> Callable[[WebDriver], bool]:
    return lambda d: text_of(d, ".page h1") == heading


def test_each_page_opens(page: WebDriver, site: Site) -> None:
    site.api("POST", "/jobs", {"name": "warm-up", "command": "true", "labels": {"kind": "a"}})
    for hash_, heading, css in (("#/queues", "Queues", "table td"),
                                ("#/jobs", "Jobs", "#jobs table td"),
                                ("#/runs", "Runs", "#runs"),
                                ("#/models", "Models", ".page")):
        page.get(site.base + "/" + hash_)
        wait(page, heading_is(heading), f"the {heading} page")
        shown(page, css)
    page.get(site.base + "/#/queues")
    wait(page, lambda d: "default" in text_of(d, ".page"), "the default queue")
    assert "local" in text_of(page, ".page")  # its pool
    # The team's budget over time, used against its limit.
    assert re.search(r"team lab\s+7 days\s+—\s+[0-9.]+ of 1,000",
                     text_of(page, ".page")), text_of(page, ".page")
    page.get(site.base + "/#/jobs")
    wait(page, lambda d: "warm-up" in text_of(d, "#jobs"), "the job in the list")
    Select(page.find_element(By.ID, "filter-state")).select_by_value("RUNNING")
    page.find_element(By.CSS_SELECTOR, "form.filters button").click()
    wait(page, lambda d: "warm-up" not in text_of(d, "#jobs"), "the state filter")
    Select(page.find_element(By.ID, "filter-state")).select_by_value("")
    page.find_element(By.ID, "filter-label").send_keys("kind=a")
    page.find_element(By.CSS_SELECTOR, "form.filters button").click()
    wait(page, lambda d: "warm-up" in text_of(d, "#jobs"), "the label filter")
    page.find_element(By.ID, "filter-label").clear()
    page.find_element(By.CSS_SELECTOR, "form.filters button").click()


def test_a_job_submitted_from_the_page_succeeds_live_with_its_chart(
        page: WebDriver, site: Site) -> None:
    submit_from_form(page, site, "curve-a", curve(1), "lr=0.1")
    job_id = job_id_in_url(page)
    site.jobs["curve-a"] = job_id
    page.execute_script("window.notReloaded = true;")
    first = wait(page, lambda d: text_of(d, "#job-state"), "the job's state")
    assert first in {"WAITING", "LAUNCHING", "RUNNING"}, first
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg.chart circle.point")) >= 2,
         "a chart with points while it runs")
    wait(page, lambda d: text_of(d, "#job-state") == "SUCCEEDED", "SUCCEEDED on the page")
    assert page.execute_script("return window.notReloaded === true;")
    wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg.chart circle.point")) == 6,
         "all six points")
    assert page.find_element(By.CSS_SELECTOR, "svg.chart").get_attribute("data-metric") == "loss"
    wait(page, lambda d: "step 6" in text_of(d, "#log"), "the log's last line")
    assert text_of(page, "#job-name") == "curve-a"
    assert "null" not in text_of(page, "#job-summary").split()
    timeline = text_of(page, "#timeline")
    for state in ("WAITING", "LAUNCHING", "RUNNING", "SUCCEEDED"):
        assert state in timeline
    assert "submitted" in timeline and "exited with code 0" in timeline
    assert page.find_elements(By.CSS_SELECTOR, "#cancel") == []
    shown(page, f"a[href='#/runs/{job_id}-1']")
    shown(page, "a[href='#/models/curve-a']")
    screenshot_dir = os.environ.get("TRAINYARD_SCREENSHOT_DIR")
    if screenshot_dir:
        save_full_page(page, Path(screenshot_dir) / "dashboard-job.png")


def save_full_page(driver: WebDriver, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    size = driver.get_window_size()
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(int(height) + 140, 2400))
    try:
        driver.save_screenshot(str(path))
    finally:
        driver.set_window_size(size["width"], size["height"])


def test_a_waiting_job_says_why_and_can_be_cancelled(page: WebDriver, site: Site) -> None:
    holder = site.api("POST", "/jobs", {"name": "holder", "command": "sleep 30",
                                        "queue": "single"})["job_id"]
    wait_until(lambda: site.server.jobs.get(holder).state is JobState.RUNNING, WAIT_S,
               "the holder to run")
    job_id = site.api("POST", "/jobs", {"name": "waiter", "command": "true",
                                        "queue": "single"})["job_id"]
    page.get(site.base + f"/#/jobs/{job_id}")
    pending = wait(page, lambda d: ": " in text_of(d, "#pending") and text_of(d, "#pending"),
                   "why it waits")
    assert pending.startswith("Position 1 in queue single: "), pending
    reason = site.api("GET", f"/jobs/{job_id}")["pending_reason"]["message"]
    assert pending.endswith(reason)
    # The forecast's prediction, written as the tracker writes it: the page words it as
    # the command line does, and the list has it in brief.
    now = int(time.time())  # whole seconds, never ahead of the clock
    prediction = PredictedStart(as_of=now - 40, p50=now + 2100, p90=now + 16800,
                                horizon_s=86400)
    PredictionStore(site.server.db).replace({job_id: prediction})
    said = wait(page, lambda d: text_of(d, "#predicted-start"), "the predicted start")
    assert re.fullmatch(re.escape(describe(prediction, time.time())) +
                        r" \(as of 4\d s ago\)", said), said
    page.get(site.base + "/#/jobs")
    wait(page, lambda d: any(job_id in row.text and "~35 min" in row.text
                             for row in d.find_elements(By.CSS_SELECTOR, "#jobs tr")),
         "the predicted start in the list")
    assert page.find_element(By.XPATH, "//*[@id='jobs']//th[text()='starts']")
    page.get(site.base + "/#/queues")
    wait(page, lambda d: "single 1 1" in text_of(d, ".page"), "single's waiting and running")
    teams = text_of(page, ".page")
    assert "lab" in teams and "1 / 4 CPUs" in teams, teams
    page.get(site.base + f"/#/jobs/{job_id}")
    click(page, "#cancel")
    wait(page, lambda d: text_of(d, "#job-state") == "CANCELLED", "the cancelled state")
    site.api("POST", f"/jobs/{holder}/cancel", {})


def test_a_job_waiting_for_another_says_so_and_links_it(page: WebDriver, site: Site) -> None:
    gate = site.server.config.data_dir / "after-gate"
    first = site.api("POST", "/jobs", {"name": "first", "command":
                                       f"while [ ! -e {gate} ]; do sleep 0.05; done"})["job_id"]
    then = site.api("POST", "/jobs", {"name": "then", "command": "true",
                                      "after": [{"job_id": first}]})["job_id"]
    wait_until(lambda: "(RUNNING)" in site.server.jobs.get(then).pending_message, WAIT_S,
               "the dependent's reason")
    page.get(site.base + f"/#/jobs/{then}")
    pending = wait(page, lambda d: "waits for" in text_of(d, "#pending") and
                   text_of(d, "#pending"), "why it waits")
    assert pending.endswith(f"waits for job {first} (RUNNING) to succeed"), pending
    assert text_of(page, "#job-after") == f"After {first} (succeeded; RUNNING)"
    gate.touch()
    wait(page, lambda d: text_of(d, "#job-state") == "SUCCEEDED", "the dependent's end")
    assert text_of(page, "#job-after") == f"After {first} (succeeded; done)"
    click(page, "#job-after a")
    wait(page, lambda d: text_of(d, "#job-name") == "first", "the needed job's page")


def test_compare_two_runs(page: WebDriver, site: Site) -> None:
    other = site.api("POST", "/jobs", {"name": "curve-b", "command": curve(5),
                                       "hyperparameters": {"lr": "0.5"}})["job_id"]
    wait_until(lambda: site.server.jobs.get(other).state is JobState.SUCCEEDED, WAIT_S,
               "curve-b to succeed")
    page.get(site.base + "/#/runs")
    page.find_element(By.ID, "sort-metric").send_keys("loss")
    page.find_element(By.ID, "filter-runs").click()
    for run_id in (f"{site.jobs['curve-a']}-1", f"{other}-1"):
        click(page, f"input.pick[value='{run_id}']")
    page.find_element(By.ID, "compare").click()
    wait(page, lambda d: len(d.find_elements(
        By.CSS_SELECTOR, "#compare-charts svg[data-metric=loss] g.series")) == 2,
        "two curves on one chart")
    for group in page.find_elements(By.CSS_SELECTOR, "#compare-charts g.series"):
        assert len(group.find_elements(By.CSS_SELECTOR, "circle.point")) == 6
    differs = [row.text for row in page.find_elements(
        By.CSS_SELECTOR, "#compare-hyperparameters tr.differs")]
    assert differs == ["lr 0.1 0.5"], differs
    same = page.find_elements(By.CSS_SELECTOR, "#compare-settings tr:not(.differs)")
    assert any(row.text.startswith("queue") for row in same)
    assert any(row.text.startswith("command") for row in page.find_elements(
        By.CSS_SELECTOR, "#compare-settings tr.differs"))


def test_a_model_shows_its_versions_and_lineage(page: WebDriver, site: Site) -> None:
    page.get(site.base + "/#/models/curve-a")
    lineage = shown(page, "#lineage table").text
    assert f"{site.jobs['curve-a']}-1" in lineage and "lr=0.1" in lineage
    site.api("PUT", "/models/curve-a/aliases/production", {"version": 1})
    page.refresh()
    wait(page, lambda d: "production" in text_of(d, ".page"), "the alias and its history")
    assert "new" in text_of(page, ".page")


def test_what_users_typed_stays_text(page: WebDriver, site: Site) -> None:
    submit_from_form(page, site, SCRIPT_TEXT, "true")
    refusal = wait(page, lambda d: text_of(d, "#submit-error"), "the refused name")
    assert "name" in refusal
    no_alert(page)
    page.find_element(By.ID, "submit-name").clear()
    page.find_element(By.ID, "submit-name").send_keys("xss-probe")
    page.find_element(By.ID, "submit-command").clear()
    page.find_element(By.ID, "submit-command").send_keys(f"echo '{SCRIPT_TEXT}'")
    page.find_element(By.ID, "submit-hyperparameters").send_keys(f"h={IMG_TEXT}")
    page.find_element(By.ID, "submit-labels").send_keys(f"note={SCRIPT_TEXT}")
    page.find_element(By.ID, "submit-button").click()
    job_id = job_id_in_url(page)
    wait(page, lambda d: SCRIPT_TEXT in text_of(d, "#log"), "the log line as text")
    summary = shown(page, "#job-summary").text
    assert f"note={SCRIPT_TEXT}" in summary and f"h={IMG_TEXT}" in summary
    page.get(site.base + "/#/jobs")
    wait(page, lambda d: f"note={SCRIPT_TEXT}" in text_of(d, "#jobs"), "the label in the list")
    no_alert(page)
    scripts = page.find_elements(By.TAG_NAME, "script")
    assert [s.get_attribute("src") for s in scripts] == [site.base + "/static/app.js"]
    assert page.find_elements(By.CSS_SELECTOR, "#app img") == []
    assert job_id in text_of(page, "#jobs")


def test_sign_out(page: WebDriver, site: Site) -> None:
    page.get(site.base + "/#/jobs")
    click(page, "#signout")
    shown(page, "#signin #token")
    names = {c["name"] for c in page.get_cookies()}
    assert "trainyard_session" not in names
    page.get(site.base + "/#/queues")
    shown(page, "#signin #token")


def test_a_server_without_users_needs_no_sign_in(page: WebDriver, tmp_path: Path) -> None:
    srv = TrainyardServer(ServerConfig(data_dir=tmp_path / "data", port=0, http_port=0,
                                       tracker=FAST))
    srv.start()
    try:
        site = Site(srv, f"http://127.0.0.1:{srv.http_port}", "", {})
        page.delete_all_cookies()
        submit_from_form(page, site, "alone", "echo alone")
        job_id_in_url(page)
        wait(page, lambda d: text_of(d, "#job-state") == "SUCCEEDED", "the job to succeed")
        assert page.find_elements(By.ID, "signout") == []
        assert page.find_elements(By.ID, "signin") == []
    finally:
        page.get("about:blank")
        srv.stop(grace=0)
