"""The Airflow UI as a person uses it, in a real headless Chromium (Selenium, Debian's chromium
and chromium-driver): the real api-server, scheduler (LocalExecutor) and dag-processor on
the local Postgres, the simple auth manager with a known user. Log in, open proof_run, fill
the trigger form, submit, wait for the run, and read its summary (the note and the "Proof
report" tab); a second case sees the form refuse out-of-range values with the schema's
message and checks through REST that no run was created.

Screenshots go to the test's tmp_path, and to $PROOFFLOW_SCREENSHOTS when set (the README's
docs/ui-*.png come from there). The selectors come from the page Airflow 3.3 serves: the
form's fields are named ``element_<param>``, its buttons carry data-testid attributes, the
plugin's tab is a link titled "Proof report" and its iframe has the same title."""
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import local_stack as stack
from browser import CHROMEDRIVER, CHROMIUM, MISSING, chromium, shot

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason=MISSING)]
USER = "proofflow"
DAG = "proof_run"
WAIT = 30  # seconds for any one page element


@pytest.fixture(scope="module")
def airflow_ui(tmp_path_factory, pg_new_database_module):
    """The three services with a real login (user ``proofflow``, a random password), and the
    connection publish_summary writes the run's note with."""
    tmp = tmp_path_factory.mktemp("ui")
    password = secrets.token_urlsafe(12)
    (tmp / "passwords.json").write_text(json.dumps({USER: password}))
    port = stack.free_port()
    timing_url = pg_new_database_module("timing")
    env = stack.airflow_env(
        tmp / "airflow", pg_new_database_module("airflow"), port,
        PROOFFLOW_HOME=str(tmp / "proofflow"), PROOFFLOW_DB_URL=timing_url, PROOFFLOW_RUNTIME=str(tmp / "rt"),
        PROOFFLOW_SERVICE_IDLE_S="60",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS="False",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=f"{USER}:admin",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(tmp / "passwords.json"),
        AIRFLOW_CONN_PROOFFLOW_AIRFLOW_API=json.dumps({"conn_type": "http", "host": "127.0.0.1", "port": port,
                                                       "schema": "http", "login": USER, "password": password}),
    )
    stack.proofflow_setup(env, gpu_slots=1)
    from proofflow.prover.service.client import stop_all
    with stack.running(env, tmp) as (base, procs):
        token = stack.token(base, USER, password)
        stack.wait("proof_run to be parsed",
                   lambda: stack.api(base, f"/api/v2/dags/{DAG}", token=token)["is_paused"] is False, 180, 2,
                   procs=procs)
        yield {"base": base, "password": password, "token": token, "timing_url": timing_url, "logs": tmp}
    stop_all(tmp / "rt")


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as driver:
        yield driver


def _until(driver, condition, timeout=WAIT):
    """``condition`` once it holds; a poll that a navigation of the page's own aborted (the UI's
    redirect to its log-in page, say: Chrome fails the lookup) is polled again."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, ignored_exceptions=(WebDriverException,)).until(condition)


def _open(driver, url, tries=3):
    """driver.get, again when a navigation of the page's own (the UI's redirect after a log-in,
    say) aborted it: Chrome reports that as an error of the get, not of the page."""
    from selenium.common.exceptions import WebDriverException
    for attempt in range(tries):
        try:
            return driver.get(url)
        except WebDriverException as exc:
            if "aborted by navigation" not in str(exc) or attempt == tries - 1:
                raise
            time.sleep(1)


def _status(url, token=None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def _log_in_and_open_trigger_form(driver, ui):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    _open(driver, f"{ui['base']}/dags/{DAG}")
    user = _until(driver, EC.presence_of_element_located((By.NAME, "username")))
    assert "/auth/login" in driver.current_url, "without a session the UI must ask to log in"
    user.send_keys(USER)
    driver.find_element(By.NAME, "password").send_keys(ui["password"])
    driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    _until(driver, lambda d: "/auth/login" not in d.current_url)
    if f"/dags/{DAG}" not in driver.current_url:
        _open(driver, f"{ui['base']}/dags/{DAG}")
    _until(driver, EC.element_to_be_clickable((By.CSS_SELECTOR, "[data-testid=trigger-dag-button]"))).click()
    return _until(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "[role=dialog][data-state=open]")))


def _type(driver, param, value):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    field = driver.find_element(By.NAME, f"element_{param}")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(str(value))
    field.send_keys(Keys.TAB)  # blur: the form takes the value as typed
    assert field.get_attribute("value") == str(value), f"the form changed {param} {value!r} on its own"


def _choose(driver, param, value):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    box = driver.find_element(By.CSS_SELECTOR, f"#element_{param} input[role=combobox]")
    box.send_keys(value)
    box.send_keys(Keys.ENTER)
    assert driver.find_element(By.NAME, f"element_{param}").get_attribute("value") == value


def _submit(driver):
    from selenium.webdriver.common.by import By
    # a refused submit's error toast covers the button until it goes
    _until(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-scope=toast][data-state=open]"))
    driver.find_element(By.CSS_SELECTOR, "[data-testid=trigger-dag-submit]").click()


def _runs(ui) -> list[dict]:
    return stack.api(ui["base"], f"/api/v2/dags/{DAG}/dagRuns?limit=100", token=ui["token"])["dag_runs"]


def test_trigger_from_the_form_and_see_the_run_summary(airflow_ui, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    from proofflow.airflow.params import schema
    from proofflow.timing.summary import note_markdown, run_figures
    from proofflow.timing import TimingStore
    ui, driver = airflow_ui, browser
    form = _log_in_and_open_trigger_form(driver, ui)
    text = form.text
    for name, s in schema().items():  # every parameter with its title and description
        assert s["title"] in text and s["description"] in text, name
    # the curve's default is empty (null), shown as its entry: the circuit's curve
    assert driver.find_element(By.ID, "element_curve").text == schema()["curve"]["values_display"]["null"]
    _type(driver, "log2", 8)
    _type(driver, "partitions", 2)
    _choose(driver, "backend", "cpu")
    shot(driver, tmp_path, "ui-trigger-form.png")
    _submit(driver)

    # The UI moves to the new run's page.
    _until(driver, lambda d: f"/dags/{DAG}/runs/" in d.current_url)
    run_id = urllib.parse.unquote(driver.current_url.split("/runs/", 1)[1].split("/")[0])
    q = urllib.parse.quote(run_id, safe="")
    run = stack.api(ui["base"], f"/api/v2/dags/{DAG}/dagRuns/{q}", token=ui["token"])
    assert run["conf"]["log2"] == 8 and run["conf"]["partitions"] == 2 and run["conf"]["backend"] == "cpu"
    assert run["conf"]["curve"] is None  # as asked: the run takes mimc's, the default (below)

    def finished():
        r = stack.api(ui["base"], f"/api/v2/dags/{DAG}/dagRuns/{q}", token=ui["token"])
        # publish_summary (a teardown) may still be writing the note when the run's state is set
        return r if r["state"] in ("success", "failed") and r["note"] else None
    run = stack.wait("the run to finish with its note", finished, 240, 2)
    assert run["state"] == "success", run

    # The note is the summary of the run's timing rows, links included.
    store = TimingStore(ui["timing_url"])
    fig = run_figures(store, DAG, run_id)
    assert fig["proofs_verified"] == 2 and [h["partition"] for h in fig["h2d"]] == [0, 1]
    assert store.run(DAG, run_id)["curve"] == "bls12_381"
    assert run["note"] == note_markdown(fig)

    # The run page shows the note's first line; the "Proof report" tab shows the report.
    _open(driver, f"{ui['base']}/dags/{DAG}/runs/{q}")
    note = _until(driver, EC.visibility_of_element_located(
        (By.XPATH, "//p[strong[starts-with(normalize-space(.), 'Proof run')]]")))
    assert "Proof run success" in note.text and "2/2 proofs verified" in note.text
    _until(driver, EC.element_to_be_clickable((By.CSS_SELECTOR, "a[title='Proof report']"))).click()
    frame = _until(driver, EC.presence_of_element_located((By.CSS_SELECTOR, "iframe[title='Proof report']")))
    driver.switch_to.frame(frame)
    summary = _until(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "#proofflow-summary table")))
    cells = [c.text for c in summary.find_elements(By.CSS_SELECTOR, "tbody td")]
    assert cells[:3] == ["success", "2", "2"] and cells[-1] == "none", cells
    h2d_rows = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
                for r in driver.find_elements(By.CSS_SELECTOR, "#proofflow-h2d tbody tr")]
    assert [(r[0], r[3]) for r in h2d_rows] == [(str(h["partition"]), f"{h['gbps']:.2f}") for h in fig["h2d"]]
    img = driver.find_element(By.CSS_SELECTOR, "#proofflow-timeline img")
    _until(driver, lambda d: int(img.get_attribute("naturalWidth") or 0) > 1000)
    driver.switch_to.default_content()
    shot(driver, tmp_path, "ui-run-summary.png")
    store.dispose()

    # The note's PNG link serves the timeline to the logged-in browser, and to no one else.
    png = f"{ui['base']}/proofflow/runs/{DAG}/{q}/timeline.png"
    _open(driver, png)
    assert driver.execute_script("return document.images.length && document.images[0].naturalWidth") > 1000
    assert _status(png, ui["token"]) == (200, "image/png")
    assert _status(png)[0] == 401 and _status(f"{ui['base']}/proofflow/runs/{DAG}/{q}")[0] == 401
    assert _status(f"{ui['base']}/proofflow/runs/{DAG}/no-such-run", ui["token"])[0] == 404


def test_the_form_refuses_out_of_range_values_before_any_run(airflow_ui, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    ui, driver = airflow_ui, browser
    before = {r["dag_run_id"] for r in _runs(ui)}
    _log_in_and_open_trigger_form(driver, ui)
    from proofflow.spec import MAX_LOG2
    for param, bad, good, message in (("log2", 99, 8, f"99 is greater than the maximum of {MAX_LOG2}"),
                                       ("partitions", 0, 2, "0 is less than the minimum of 1")):
        _type(driver, param, bad)
        _submit(driver)
        dialog = _until(driver, EC.visibility_of_element_located(
            (By.XPATH, f"//*[@role='dialog'][@data-state='open'][contains(., '{message}')]")))
        assert f"Invalid input for param {param}" in dialog.text
        if param == "log2":
            shot(driver, tmp_path, "ui-refused-log2.png")
        # the toast stays while the pointer rests on it (where the button was)
        ActionChains(driver).move_to_element(dialog.find_element(By.TAG_NAME, "h2")).perform()
        _type(driver, param, good)
    # The API answered each submit before its message showed: a run it had made is listed.
    assert {r["dag_run_id"] for r in _runs(ui)} == before, "a refused form must create no run"
