#!/usr/bin/env python3
"""The dashboard in a real browser: Chromium driven by Selenium through Debian's chromedriver.

Run by EndToEndTests.DashboardBrowserTests, one scenario a run:

    python3 Tests/Dashboard/dashboard_scenarios.py SCENARIO

with the server and what the test seeded in NIMBUS_DASHBOARD_FIXTURE (JSON: url, adminEmail, password,
container, apiToken, nimbus, screenshots). Each scenario checks what a person sees in the browser against
what the API and the CLI answer, and exits non-zero with the reason when they disagree. Nothing here
waits a fixed time: every wait is for a condition, with a deadline.
"""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

FIXTURE = json.loads(os.environ["NIMBUS_DASHBOARD_FIXTURE"])
URL = FIXTURE["url"].rstrip("/")
PASSWORD = FIXTURE["password"]
CONTAINER = FIXTURE["container"]
# Generous: a loaded two-core machine runs the rest of the suite beside the browser.
DEADLINE = 60
DESKTOP = (1280, 800)
PHONE = (390, 844)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# The API, as an app would call it.

def call(method, path, body=None, session=None, api_token=True):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(URL + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if session:
        request.add_header("Authorization", "Bearer " + session)
    if api_token:
        request.add_header("X-Nimbus-API-Token", FIXTURE["apiToken"])
    try:
        with urllib.request.urlopen(request, timeout=DEADLINE) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, (json.loads(text) if text.startswith("{") else text)


def sign_up_and_in(email, device):
    call("POST", "/auth/1/signup", {"email": email, "password": PASSWORD}, api_token=False)
    status, answer = call(
        "POST", "/auth/1/signin", {"email": email, "password": PASSWORD, "deviceName": device}, api_token=False)
    check(status == 200, f"signing in {email} as {device} answered {status}: {answer}")
    return answer


def database(environment, scope):
    return f"/database/1/{CONTAINER}/{environment}/{scope}"


def modify(session, scope, operations, environment="development"):
    status, answer = call("POST", database(environment, scope) + "/records/modify", {"operations": operations}, session)
    check(status == 200, f"records/modify answered {status}: {answer}")
    return answer["records"]


def lookup(session, scope, name, environment="development"):
    status, answer = call(
        "POST", database(environment, scope) + "/records/lookup", {"records": [{"recordName": name}]}, session)
    check(status == 200, f"records/lookup answered {status}: {answer}")
    return answer["records"][0]


def query(session, scope, record_type, filters, environment="development"):
    status, answer = call(
        "POST", database(environment, scope) + "/records/query",
        {"query": {"recordType": record_type, "filterBy": filters}}, session)
    check(status == 200, f"records/query answered {status}: {answer}")
    return answer["records"]


# The browser.

class Browser:
    def __init__(self, size=DESKTOP, dark=False):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        self.profile = tempfile.mkdtemp(prefix="nimbus-chromium-")
        for argument in [
            "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={self.profile}", f"--window-size={size[0]},{size[1]}",
            # Nothing beyond loopback: no updates, sync, safe browsing, metrics or name lookups.
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-client-side-phishing-detection", "--disable-domain-reliability",
            "--metrics-recording-only", "--no-pings", "--safebrowsing-disable-auto-update",
            "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_page_load_timeout(DEADLINE)
        self.set_size(size)
        if dark:
            self.driver.execute_cdp_cmd(
                "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})

    def set_size(self, size):
        # The viewport itself, whatever the window's decorations take.
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": size[0] < 600})
        self.size = size

    def close(self):
        self.driver.quit()

    def wait(self, condition, what):
        # A page being replaced can make a check fail in passing ("frame detached"): checked again.
        waiting = WebDriverWait(self.driver, DEADLINE, ignored_exceptions=(WebDriverException,))
        try:
            return waiting.until(condition)
        except TimeoutException as error:
            raise Failure(f"waited {DEADLINE} s for {what} on {self.driver.current_url}: {self.page_text()[:2000]}") from error

    def document_id(self):
        """Which document the tab shows: a new one after every navigation."""
        return self.driver.execute_script("return performance.timeOrigin")

    def wait_for_new_page(self, old, what):
        def loaded(driver):
            return self.document_id() != old and driver.execute_script("return document.readyState") == "complete"
        self.wait(loaded, what)

    def page_text(self):
        try:
            return self.driver.find_element(By.TAG_NAME, "main").text
        except Exception:
            return self.driver.page_source[:2000]

    def open(self, path):
        self.driver.get(URL + path)
        self.wait(EC.presence_of_element_located((By.TAG_NAME, "h1")), "the page's heading")
        self.check_policy()

    def find(self, css, within=None):
        return (within or self.driver).find_element(By.CSS_SELECTOR, css)

    def all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def heading(self):
        return self.find("h1").text

    def submit(self, form, confirm=None):
        """Submits a form with its submit button and waits for the next page; accepts the confirmation."""
        old = self.document_id()
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        if confirm is not None:
            alert = self.wait(EC.alert_is_present(), "the confirmation dialog")
            check(confirm in alert.text, f"the confirmation asks {alert.text!r}, not about {confirm!r}")
            alert.accept()
        self.wait_for_new_page(old, "the form's answer")
        self.wait(EC.presence_of_element_located((By.TAG_NAME, "h1")), "the answer's heading")
        self.check_policy()

    def notice(self):
        found = self.all("#notice")
        return found[0].text if found else None

    def error(self):
        found = self.all("#error")
        return found[0].text if found else None

    def expect_notice(self, words):
        check(self.error() is None, f"expected {words!r} but the page shows the error {self.error()!r}")
        notice = self.notice() or ""
        check(words in notice, f"expected the notice {words!r}, the page says {notice!r}: {self.page_text()[:1500]}")

    def fill(self, form, name, value):
        field = form.find_element(By.NAME, name)
        field.clear()
        field.send_keys(value)

    def sign_in(self, email, password=PASSWORD):
        self.open("/dashboard/signin")
        form = self.find("#signin")
        self.fill(form, "email", email)
        self.fill(form, "password", password)
        self.submit(form)
        check(self.error() is None, f"signing in {email} failed: {self.error()}")

    def check_policy(self):
        """No page may need inline script or style: the Content-Security-Policy would block it."""
        for entry in self.driver.get_log("browser"):
            check("Content Security Policy" not in entry["message"] and "Content-Security-Policy" not in entry["message"],
                  f"the page broke its Content-Security-Policy: {entry['message']}")

    def screenshot(self, name):
        directory = FIXTURE["screenshots"]
        os.makedirs(directory, exist_ok=True)
        self.driver.save_screenshot(os.path.join(directory, f"{name}-{self.size[0]}x{self.size[1]}.png"))

    def has_no_horizontal_scroll(self):
        width = self.driver.execute_script("return document.documentElement.scrollWidth")
        viewport = self.driver.execute_script("return window.innerWidth")
        return width <= viewport + 1, width, viewport

    def no_alert(self):
        try:
            alert = self.driver.switch_to.alert
            text = alert.text
            alert.dismiss()
            raise Failure(f"a script ran: an alert says {text!r}")
        except NoAlertPresentException:
            pass


def schema_section(browser, environment):
    return browser.find(f"#env-{environment}")


def record_type(browser, environment, name):
    found = schema_section(browser, environment).find_elements(By.CSS_SELECTOR, f"article[data-type='{name}']")
    return found[0] if found else None


def add_field(browser, type_name, field, field_type, indexes=()):
    form = record_type(browser, "Development", type_name).find_element(By.CSS_SELECTOR, "form.add-field")
    browser.fill(form, "name", field)
    Select(form.find_element(By.NAME, "fieldType")).select_by_visible_text(field_type)
    for index in indexes:
        form.find_element(By.NAME, index).click()
    browser.submit(form)


def create_type(browser, name):
    form = browser.find("#create-type")
    browser.fill(form, "name", name)
    browser.submit(form)


def schema_path():
    return f"/dashboard/containers/{CONTAINER}/schema"


def records_path(query=""):
    return f"/dashboard/containers/{CONTAINER}/records" + query


# Scenarios.

def scenario_sign_in(browser):
    # Every page needs a session: the browser is sent to sign in, and back afterwards.
    browser.open(schema_path())
    check(browser.heading() == "Sign in", f"an unsigned visitor sees {browser.heading()!r}")
    form = browser.find("#signin")
    browser.fill(form, "email", FIXTURE["adminEmail"])
    browser.fill(form, "password", "not the password")
    browser.submit(form)
    check("wrong" in (browser.error() or ""), f"a wrong password shows {browser.error()!r}")
    # By keyboard only: type, tab to the password, press Enter.
    email = browser.find("#email")
    email.clear()
    email.send_keys(FIXTURE["adminEmail"], Keys.TAB)
    active = browser.driver.switch_to.active_element
    check(active.get_attribute("id") == "password", "Tab from the email reaches the password")
    old = browser.document_id()
    active.send_keys(PASSWORD, Keys.ENTER)
    browser.wait_for_new_page(old, "signing in")
    check(browser.heading() == f"Schema of {CONTAINER}", f"after signing in the browser shows {browser.heading()!r}")
    cookie = browser.driver.get_cookie("nimbus_dashboard")
    check(cookie and cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/dashboard",
          f"the session cookie is {cookie}")
    check(browser.driver.execute_script("return document.cookie").find("nimbus_dashboard=") < 0,
          "page scripts cannot read the session cookie")
    browser.screenshot("schema")
    # Signing out ends the session: the same cookie no longer opens a page.
    browser.open("/dashboard")
    browser.submit(browser.find("form.signout"))
    browser.driver.add_cookie({"name": "nimbus_dashboard", "value": cookie["value"], "path": "/dashboard"})
    browser.open("/dashboard")
    check(browser.heading() == "Sign in", "a signed-out session opens nothing")


def scenario_tutorial(browser):
    """The tutorial: create Items, save records from an app, add INT64 number while records exist, query by it."""
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(schema_path())
    create_type(browser, "Items")
    browser.expect_notice("record type was created")
    add_field(browser, "Items", "name", "STRING", ["queryable"])
    browser.expect_notice("field was added")
    # The app saves records (Ann's phone, her private database).
    ann = sign_up_and_in("ann@example.com", "phone")
    modify(ann["sessionToken"], "private", [
        {"operationType": "create", "record": {"recordName": name, "recordType": "Items",
                                               "fields": {"name": {"value": name}}}}
        for name in ["milk", "bread", "eggs"]])
    # The developer adds number while Items holds records: nothing to migrate.
    browser.open(schema_path())
    add_field(browser, "Items", "number", "INT64", ["queryable", "sortable"])
    browser.expect_notice("no migration")
    row = [r for r in record_type(browser, "Development", "Items").find_elements(By.CSS_SELECTOR, ".field:not(.head)")
           if r.find_element(By.CSS_SELECTOR, ".name").text == "number"]
    check(row, "the schema shows the new field number")
    check("INT64" in row[0].text, f"number shows as {row[0].text!r}")
    browser.screenshot("schema-tutorial")
    # The app sets numbers; the old records still read, without number.
    milk = lookup(ann["sessionToken"], "private", "milk")
    check("number" not in milk.get("fields", {}), "milk was saved before number existed")
    modify(ann["sessionToken"], "private", [
        {"operationType": "update", "record": {"recordName": "milk", "recordType": "Items",
                                               "recordChangeTag": milk["recordChangeTag"],
                                               "fields": {"number": {"value": 2}}}},
        {"operationType": "create", "record": {"recordName": "jam", "recordType": "Items",
                                               "fields": {"name": {"value": "jam"}, "number": {"value": 1}}}}])
    # By the API…
    found = query(ann["sessionToken"], "private", "Items",
                  [{"fieldName": "number", "comparator": "GREATER_THAN", "fieldValue": {"value": 1}}])
    check([r["recordName"] for r in found] == ["milk"], f"number > 1 through the API found {found}")
    # …by the CLI…
    config = tempfile.mkdtemp(prefix="nimbus-cli-")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NIMBUS_")}
    environment["NIMBUS_SERVER"] = URL
    login = subprocess.run(
        [FIXTURE["nimbus"], "login", "--config", config, "--email", "ann@example.com", "--password", PASSWORD,
         "--api-token", FIXTURE["apiToken"], "--container", CONTAINER],
        env=environment, capture_output=True, text=True, timeout=DEADLINE)
    check(login.returncode == 0, f"nimbus login failed: {login.stderr}")
    cli = subprocess.run(
        [FIXTURE["nimbus"], "records", "query", "Items", "--filter", "number > 1", "--config", config],
        env=environment, capture_output=True, text=True, timeout=DEADLINE)
    check(cli.returncode == 0 and "milk" in cli.stdout and "jam" not in cli.stdout and "bread" not in cli.stdout,
          f"nimbus records query Items --filter 'number > 1' printed {cli.stdout!r} {cli.stderr!r}")
    # …and in the dashboard, in Ann's private database.
    browser.open(records_path(
        f"?env=development&db=private&user={ann['userRecordName']}&zone=_defaultZone&type=Items"
        "&field=number&cmp=GREATER_THAN&value=1"))
    names = [a.text for a in browser.all("#results tbody td:first-child a")]
    check(names == ["milk"], f"the dashboard's query number > 1 shows {names}")
    browser.screenshot("records")


def scenario_record_edits(browser):
    """Create, edit and delete a record in the browser; the API sees each change."""
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(schema_path())
    create_type(browser, "Notes")
    add_field(browser, "Notes", "title", "STRING", ["queryable"])
    add_field(browser, "Notes", "pages", "INT64", ["queryable", "sortable"])
    add_field(browser, "Notes", "due", "TIMESTAMP")
    add_field(browser, "Notes", "place", "LOCATION")
    add_field(browser, "Notes", "scan", "ASSET")
    browser.open(records_path("?env=development&db=public&type=Notes"))
    browser.find("#new-record").click()
    browser.wait(EC.presence_of_element_located((By.ID, "record")), "the new record form")
    form = browser.find("#record")
    browser.fill(form, "recordName", "first-note")
    browser.fill(form, "field.title", "Hello")
    browser.fill(form, "field.pages", "not a number")
    browser.submit(form)
    check("whole number" in (browser.error() or ""), f"a bad number shows {browser.error()!r}")
    form = browser.find("#record")
    check(form.find_element(By.NAME, "field.title").get_attribute("value") == "Hello", "what was typed is kept")
    browser.fill(form, "field.pages", "12")
    browser.fill(form, "field.due", "2026-12-24T18:00:00Z")
    browser.fill(form, "field.place", "48.8584, 2.2945")
    browser.submit(form)
    browser.expect_notice("record was saved")
    admin = sign_in_api(FIXTURE["adminEmail"])
    record = lookup(admin, "public", "first-note")
    fields = record.get("fields", {})
    check(fields.get("title", {}).get("value") == "Hello" and fields.get("pages", {}).get("value") == 12,
          f"the API reads the created record as {record}")
    check(fields.get("due", {}).get("value") == 1798135200000, f"due reads {fields.get('due')}")
    check(abs(fields.get("place", {}).get("value", {}).get("latitude", 0) - 48.8584) < 1e-9, f"place reads {fields.get('place')}")
    tag = browser.find("#change-tag").text
    check(tag == record["recordChangeTag"], f"the page shows change tag {tag}, the API {record['recordChangeTag']}")
    check("Web dashboard" in browser.find("#modified").text, f"the page says who changed it: {browser.find('#modified').text}")
    browser.screenshot("record")
    # Edit: the API sees the new value and a new change tag.
    form = browser.find("#record")
    browser.fill(form, "field.title", "Hello again")
    browser.submit(form)
    browser.expect_notice("record was saved")
    edited = lookup(admin, "public", "first-note")
    check(edited["fields"]["title"]["value"] == "Hello again", f"after the edit the API reads {edited}")
    check(edited["recordChangeTag"] != record["recordChangeTag"], "the edit gave the record a new change tag")
    # An edit from a page that went stale is refused, not applied over the newer change.
    stale = browser.find("#change-tag").text
    modify(admin, "public", [{"operationType": "update", "record": {
        "recordName": "first-note", "recordType": "Notes", "recordChangeTag": stale, "fields": {"pages": {"value": 13}}}}])
    form = browser.find("#record")
    browser.fill(form, "field.title", "Lost update")
    browser.submit(form)
    check(browser.error() is not None, "saving over a newer change shows an error")
    check(lookup(admin, "public", "first-note")["fields"]["title"]["value"] == "Hello again", "the stale edit changed nothing")
    # A file for the ASSET field, uploaded from the record's page: saved in the record, downloaded back.
    browser.open(records_path("/first-note?env=development&db=public&zone=_defaultZone"))
    upload = os.path.join(tempfile.mkdtemp(prefix="nimbus-asset-"), "scan.txt")
    with open(upload, "w") as file:
        file.write("the scanned page")
    form = browser.find("#upload-scan")
    form.find_element(By.NAME, "file").send_keys(upload)
    browser.submit(form)
    browser.expect_notice("file was uploaded")
    with_file = lookup(admin, "public", "first-note")
    asset = with_file["fields"].get("scan", {}).get("value", {})
    check(asset.get("size") == 16 and with_file["fields"]["title"]["value"] == "Hello again",
          f"the API reads the record with its file and its other fields: {with_file}")
    link = browser.find("a[download][href*='/assets/1/download/']").get_attribute("href")
    check(browser_download(browser, link) == "the scanned page", "the page's download link gives the uploaded bytes")
    # The record's history: each save newest first, by whom, from which device, which fields.
    history = [row.text for row in browser.all("#history tbody tr")]
    check(len(history) == 4, f"four versions: created, edited here, edited through the API, a file: {history}")
    check("Changed scan" in history[0] and "(this version)" in history[0], f"the newest is the upload: {history[0]}")
    check("Changed pages" in history[1], f"then the API's edit: {history[1]}")
    check("Changed title" in history[2] and "Web dashboard" in history[2], f"then the page's edit: {history[2]}")
    check("Created with" in history[3] and "title" in history[3], f"the oldest is the creation: {history[3]}")
    # Delete, after confirming; the API no longer finds it.
    browser.open(records_path("/first-note?env=development&db=public&zone=_defaultZone"))
    browser.submit(browser.find("#delete"), confirm="Delete Notes record first-note")
    browser.expect_notice("record was deleted")
    gone = lookup(admin, "public", "first-note")
    check(gone.get("serverErrorCode") == "NOT_FOUND", f"after the delete the API answers {gone}")


def sign_in_api(email):
    status, answer = call("POST", "/auth/1/signin", {"email": email, "password": PASSWORD, "deviceName": "checker"},
                          api_token=False)
    check(status == 200, f"signing in {email} answered {status}: {answer}")
    return answer["sessionToken"]


def scenario_deploy(browser):
    """Deploy shows the diff first; production only grows, so an incompatible change is refused."""
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(schema_path())
    create_type(browser, "Items")
    add_field(browser, "Items", "name", "STRING", ["queryable"])
    browser.find("#deploy-link").click()
    browser.wait(EC.presence_of_element_located((By.ID, "changes")), "the deploy's diff")
    changes = browser.find("#changes").text
    check("+ record type Items" in changes and "+ field Items.name STRING" in changes, f"the diff shows {changes!r}")
    browser.screenshot("deploy")
    browser.submit(browser.find("#deploy"), confirm="Deploy these changes")
    browser.expect_notice("deployed to production")
    check(record_type(browser, "Production", "Items") is not None, "production shows Items after the deploy")
    admin = sign_in_api(FIXTURE["adminEmail"])
    saved = modify(admin, "public", [{"operationType": "create", "record": {
        "recordName": "p1", "recordType": "Items", "fields": {"name": {"value": "in production"}}}}], "production")
    check("recordChangeTag" in saved[0], f"production accepts the deployed type: {saved}")
    # Retyping a field production has is refused, in words, and changes nothing.
    browser.open(schema_path())
    form = browser.find("#import")
    text = browser.driver.find_element(By.ID, "import-text").get_attribute("value")
    retyped = text.replace("name STRING", "name INT64")
    check(retyped != text, f"the exported text names the field: {text}")
    browser.driver.execute_script("arguments[0].value = arguments[1]", browser.find("#import-text"), retyped)
    browser.submit(form)
    check("retype" in (browser.error() or ""), f"retyping a field shows {browser.error()!r}")
    check("STRING" in record_type(browser, "Development", "Items").text, "development still has name STRING")
    # Reset development: it no longer has Items, and deploying that would remove a type from production.
    form = browser.find("#reset")
    browser.fill(form, "confirm", CONTAINER)
    browser.submit(form, confirm="Reset development")
    browser.expect_notice("reset")
    browser.open(schema_path())
    check(record_type(browser, "Development", "Items") is not None, "development is production's schema after a reset")
    # Development without Items cannot come from the page; a reset brought Items back, so the deploy is empty.
    browser.open(schema_path() + "/deploy")
    check(browser.all("#unchanged"), f"after the reset the deploy page says: {browser.page_text()[:500]}")


def scenario_revoke(browser):
    """Signing a device out from the dashboard: the device loses access at once."""
    phone = sign_up_and_in("bob@example.com", "Bob's phone")
    status, _ = call("GET", "/auth/1/me", session=phone["sessionToken"], api_token=False)
    check(status == 200, f"the phone's session works before: {status}")
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open("/dashboard/users")
    browser.driver.find_element(By.LINK_TEXT, "bob@example.com").click()
    browser.wait(EC.presence_of_element_located((By.ID, "devices")), "Bob's devices")
    row = browser.find(f"tr[data-device='{phone['deviceID']}']")
    check("Bob's phone" in row.text, f"the devices table shows {row.text!r}")
    browser.screenshot("user")
    browser.submit(row.find_element(By.CSS_SELECTOR, "form"), confirm="Sign Bob's phone out everywhere")
    browser.expect_notice("signed out everywhere")
    status, answer = call("GET", "/auth/1/me", session=phone["sessionToken"], api_token=False)
    check(status == 401, f"after the sign-out the phone's session answers {status}: {answer}")


def scenario_access(browser):
    """A signed-in person who is not an administrator sees their own data and nothing else."""
    admin = sign_in_api(FIXTURE["adminEmail"])
    modify(admin, "public", [{"operationType": "create", "record": {
        "recordName": "secret", "recordType": "Plans", "fields": {"text": {"value": "launch"}}}}])
    carol = sign_up_and_in("carol@example.com", "Carol's laptop")
    browser.sign_in("carol@example.com")
    check(browser.heading() == "Your iCloud data", f"Carol's first page is {browser.heading()!r}")
    check(not browser.all("#containers"), "Carol sees no containers")
    for path in [schema_path(), records_path("?db=public&type=Plans"), records_path("/secret?db=public"),
                 "/dashboard/users", f"/dashboard/users/{admin_record_name()}",
                 f"/dashboard/keyvalue?user={admin_record_name()}"]:
        browser.open(path)
        check(browser.heading() == "Not found", f"Carol opening {path} sees {browser.heading()!r}")
        check("launch" not in browser.driver.page_source, f"{path} shows the record to Carol")
    # A form posted to an administrator's route is refused too.
    browser.open(f"/dashboard/users/{carol['userRecordName']}")
    check("Carol's laptop" in browser.page_text(), "Carol sees her own devices")
    csrf = browser.find("input[name=csrf]").get_attribute("value")
    post_form(browser, schema_path() + "/types", {"csrf": csrf, "name": "Hijack"})
    check(browser.heading() == "Not found", f"Carol's post answered {browser.heading()!r}")
    development = call("GET", f"/admin/1/containers/{CONTAINER}/schema/development", session=admin, api_token=False)[1]
    check("Hijack" not in development.get("text", ""), "Carol's form changed the schema")


def scenario_roles(browser):
    """A role created, granted and given in the dashboard lets its member edit others' records; taken back, it does not."""
    author = sign_up_and_in("author@example.com", "Author's phone")
    moderator = sign_up_and_in("moderator@example.com", "Moderator's phone")
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(schema_path())
    create_type(browser, "Posts")
    add_field(browser, "Posts", "text", "STRING")
    check("(the defaults)" in record_type(browser, "Development", "Posts").text, "a type without grants shows the defaults")
    form = browser.find("#create-role")
    browser.fill(form, "name", "moderators")
    browser.submit(form)
    browser.expect_notice("role was created")
    grants = record_type(browser, "Development", "Posts").find_element(By.CSS_SELECTOR, "form.grants")
    Select(grants.find_element(By.NAME, "role")).select_by_visible_text("moderators")
    grants.find_element(By.NAME, "write").click()
    browser.submit(grants)
    browser.expect_notice("grant was saved")
    shown = record_type(browser, "Development", "Posts").text
    check("WRITE to moderators" in shown and "READ to _world" in shown and "WRITE to _creator" in shown,
          f"the new grant joins the defaults: {shown}")
    modify(author["sessionToken"], "public", [{"operationType": "create", "record": {
        "recordName": "post-1", "recordType": "Posts", "fields": {"text": {"value": "first"}}}}])

    def moderate(text):
        tag = lookup(moderator["sessionToken"], "public", "post-1")["recordChangeTag"]
        return modify(moderator["sessionToken"], "public", [{"operationType": "update", "record": {
            "recordName": "post-1", "recordType": "Posts", "recordChangeTag": tag, "fields": {"text": {"value": text}}}}])[0]

    check(moderate("edited").get("serverErrorCode") is not None, "before the role, the moderator may not edit the post")
    role = browser.find("#env-Development .role[data-role='moderators']")
    browser.fill(role.find_element(By.CSS_SELECTOR, "form.add-member"), "email", "moderator@example.com")
    browser.submit(role.find_element(By.CSS_SELECTOR, "form.add-member"))
    browser.expect_notice("given the role")
    check("moderator@example.com" in browser.find("#env-Development .role[data-role='moderators']").text,
          "the role lists its new member")
    edited = moderate("edited by a moderator")
    check(edited.get("fields", {}).get("text", {}).get("value") == "edited by a moderator",
          f"with the role, the moderator edits the author's post: {edited}")
    remove = browser.find("#env-Development .role[data-role='moderators'] form[action$='/members/remove']")
    browser.submit(remove, confirm="Take role moderators from moderator@example.com")
    browser.expect_notice("no longer has the role")
    check(moderate("again").get("serverErrorCode") is not None, "with the role taken back, the edit is refused")
    browser.screenshot("schema-roles")


def scenario_developers(browser):
    """Developers see their own team's containers; another team's gets "not found", by link and by URL."""
    sign_up_and_in("dave@example.com", "Dave's Mac")
    erin = sign_up_and_in("erin@example.com", "Erin's Mac")
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open("/dashboard")
    for action, fields in [
        ("/dashboard/teams", {"name": "Other team", "teamID": "OTHERTEAM1"}),
        ("/dashboard/containers", {"identifier": "iCloud.com.example.Other", "teamID": "OTHERTEAM1"}),
        ("/dashboard/developers", {"teamID": FIXTURE["teamID"], "email": "dave@example.com"}),
        ("/dashboard/developers", {"teamID": "OTHERTEAM1", "email": "erin@example.com"}),
    ]:
        form = browser.find(f"form[action='{action}']")
        for name, value in fields.items():
            browser.fill(form, name, value)
        browser.submit(form)
        check(browser.error() is None, f"{action} with {fields} failed: {browser.error()}")
    check("dave@example.com" in browser.find(f"li[data-team='{FIXTURE['teamID']}']").text, "the team lists Dave")
    browser.screenshot("overview-teams")
    browser.driver.delete_all_cookies()
    # Erin develops the other team's container only.
    browser.sign_in("erin@example.com")
    containers = browser.find("#containers").text
    check("iCloud.com.example.Other" in containers and CONTAINER not in containers, f"Erin's containers: {containers!r}")
    check(not browser.all("#add-developer"), "Erin sees the administrators' forms")
    for path in [schema_path(), schema_path() + "/development.ckdb", schema_path() + "/deploy",
                 records_path("?db=public"), f"/dashboard/containers/{CONTAINER}"]:
        browser.open(path)
        check(browser.heading() == "Not found", f"Erin opening {path} sees {browser.heading()!r}")
    browser.open("/dashboard/containers/iCloud.com.example.Other/schema")
    check(browser.heading() == "Schema of iCloud.com.example.Other", f"Erin's own container shows {browser.heading()!r}")
    # Her form token is valid, her role is not: a post to the other container changes nothing.
    csrf = browser.find("input[name=csrf]").get_attribute("value")
    post_form(browser, schema_path() + "/types", {"csrf": csrf, "name": "ByErin"})
    check(browser.heading() == "Not found", f"Erin's post to {CONTAINER} answered {browser.heading()!r}")
    browser.driver.delete_all_cookies()
    # Dave develops the fixture's container: he changes its schema, but reads no one else's private data.
    browser.sign_in("dave@example.com")
    browser.open(schema_path())
    create_type(browser, "DaveType")
    browser.expect_notice("record type was created")
    check(record_type(browser, "Development", "ByErin") is None, "Erin's post created a type")
    browser.open(records_path(f"?db=private&user={erin['userRecordName']}"))
    check(browser.heading() == "Not found", f"Dave opening Erin's private database sees {browser.heading()!r}")


def post_form(browser, action, fields):
    """Posts a form the page does not offer, as a person could with the developer tools."""
    old = browser.document_id()
    browser.driver.execute_script("""
        const form = document.createElement('form'); form.method = 'post'; form.action = arguments[0];
        for (const [name, value] of Object.entries(arguments[1])) {
            const input = document.createElement('input'); input.name = name; input.value = value; form.appendChild(input);
        }
        document.body.appendChild(form); form.submit();""", action, fields)
    browser.wait_for_new_page(old, "the answer to the posted form")
    browser.wait(EC.presence_of_element_located((By.TAG_NAME, "h1")), "the answer's heading")


def documents_path(environment="development"):
    return f"/documents/1/{CONTAINER}/{environment}"


def save_document(session, item_id, name, data, base=None, device="phone"):
    """Uploads the file's one chunk and saves it as a device does; returns the operation's result."""
    digest = hashlib.sha256(data).hexdigest()
    request = urllib.request.Request(
        URL + f"/blobs/1/{CONTAINER}/development/{digest}", data=data, method="PUT")
    request.add_header("Authorization", "Bearer " + session)
    request.add_header("X-Nimbus-API-Token", FIXTURE["apiToken"])
    with urllib.request.urlopen(request, timeout=DEADLINE) as response:
        check(response.status == 204, f"uploading a chunk answered {response.status}")
    operation = {"operationType": "save", "itemID": item_id, "name": name, "kind": "file",
                 "content": {"contentHash": digest, "size": len(data), "chunks": [{"hash": digest, "size": len(data)}],
                             "modifiedAt": 1_800_000_000_000}}
    if base:
        operation["baseContentHash"] = base
    status, answer = call("POST", documents_path() + "/modify", {"operations": [operation], "device": device}, session)
    check(status == 200, f"saving {name} answered {status}: {answer}")
    return answer["results"][0]


def document_items(session):
    status, answer = call("POST", documents_path() + "/changes", {}, session)
    check(status == 200, f"document changes answered {status}: {answer}")
    return {item["itemID"]: item for item in answer["items"]}


def browser_download(browser, link):
    """The bytes a download link gives, fetched by the page itself (with its cookie)."""
    return browser.driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(r => r.text()).then(done, e => done('failed: ' + e));""", link)


def scenario_documents(browser):
    """A user's own documents: resolve a conflict by keeping both, delete and restore, upload; devices see it all."""
    phone = sign_up_and_in("ann@example.com", "Ann's phone")
    laptop = sign_in_api_device("ann@example.com", "Ann's laptop")
    first = save_document(phone["sessionToken"], "report", "Report.txt", b"first draft", device="Ann's phone")
    base = first["item"]["current"]["content"]["contentHash"]
    laptop_edit = save_document(laptop, "report", "Report.txt", b"laptop edit", base=base, device="Ann's laptop")
    check(laptop_edit["outcome"] == "applied", f"the laptop's edit: {laptop_edit}")
    phone_edit = save_document(phone["sessionToken"], "report", "Report.txt", b"phone edit", base=base, device="Ann's phone")
    check(phone_edit["outcome"] == "conflict", f"the phone's concurrent edit should conflict: {phone_edit}")
    # Ann, not an administrator, opens her own documents.
    browser.sign_in("ann@example.com")
    browser.open("/dashboard/documents")
    browser.driver.find_element(By.LINK_TEXT, CONTAINER).click()
    browser.wait(EC.presence_of_element_located((By.ID, "items")), "the container's folder")
    check("conflict" in browser.find("#items").text, f"the folder marks the conflict: {browser.find('#items').text!r}")
    browser.driver.find_element(By.LINK_TEXT, "Report.txt").click()
    browser.wait(EC.presence_of_element_located((By.ID, "conflicts")), "the conflict")
    downloaded = browser_download(browser, browser.find("#current a[download]").get_attribute("href"))
    # The last save is current; the one it raced is set beside it as the conflict version.
    check(downloaded == "phone edit", f"the current version downloads as {downloaded[:300]!r}, not the phone's edit")
    browser.screenshot("document-conflict")
    conflict = browser.find("#conflicts .conflict")
    check("Ann's laptop" in conflict.text, f"the conflict version says where it came from: {conflict.text!r}")
    browser.submit(conflict.find_element(By.CSS_SELECTOR, "form.keep-both"))
    browser.expect_notice("conflict was resolved")
    check(not browser.all("#conflicts"), "the conflict is gone from the page")
    items = document_items(laptop)
    check(items["report"]["conflicts"] == [], f"devices see the conflict resolved: {items['report']}")
    copies = [item for item in items.values() if item["name"] == "Report (Ann's laptop).txt"]
    check(len(copies) == 1 and copies[0]["current"]["content"]["contentHash"] == hashlib.sha256(b"laptop edit").hexdigest(),
          f"the laptop's version was kept beside it: {[i['name'] for i in items.values()]}")
    # An earlier version comes back as the newest.
    history = browser.find("#history tbody tr")
    browser.submit(history.find_element(By.CSS_SELECTOR, "form"), confirm="current one")
    browser.expect_notice("earlier version is the current one")
    check(document_items(laptop)["report"]["current"]["content"]["contentHash"] == hashlib.sha256(b"first draft").hexdigest(),
          "restoring the first draft makes it current")
    # Delete, then restore from Recently Deleted.
    browser.submit(browser.find("#delete"), confirm="Move Report.txt to Recently Deleted")
    browser.expect_notice("Recently Deleted")
    check(document_items(laptop)["report"].get("deletedAt"), "devices see the document deleted")
    row = browser.find("#trash tr[data-item='report']")
    browser.screenshot("trash")
    browser.submit(row.find_element(By.CSS_SELECTOR, "form.restore"))
    browser.expect_notice("restored")
    check(not document_items(laptop)["report"].get("deletedAt"), "devices see the document restored")
    # Upload a file into the top folder: devices find it with its bytes' hash.
    browser.open(f"/dashboard/documents/{CONTAINER}/development")
    upload = os.path.join(tempfile.mkdtemp(prefix="nimbus-upload-"), "Notes <b>.txt")
    with open(upload, "wb") as file:
        file.write(b"uploaded from the browser " * 1000)
    browser.find("#file").send_keys(upload)
    browser.submit(browser.find("#upload"))
    browser.expect_notice("file was uploaded")
    uploaded = [item for item in document_items(laptop).values() if item["name"] == "Notes <b>.txt"]
    check(uploaded and uploaded[0]["current"]["content"]["contentHash"]
          == hashlib.sha256(b"uploaded from the browser " * 1000).hexdigest(), f"devices see the upload: {uploaded}")
    check("Notes <b>.txt" in [a.text for a in browser.all("#items a")], "the folder lists the upload by its name, as text")
    browser.screenshot("folder")


def scenario_tokens(browser):
    """An API token made in the dashboard: shown once, limited to its web origin, and revoked."""
    ann = sign_up_and_in("ann@example.com", "Ann's phone")
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open("/dashboard/tokens")
    form = browser.find("#create-token")
    browser.fill(form, "name", "web app")
    browser.fill(form, "origins", "https://notes.example.com")
    browser.submit(form)
    browser.expect_notice("API token was created")
    secret = browser.find("#token-secret").text
    check(len(secret) == 64, f"the page shows the secret once: {secret!r}")
    browser.screenshot("tokens")

    def values(origin):
        request = urllib.request.Request(URL + "/kv/1/" + FIXTURE["storeIdentifier"] + "/values")
        request.add_header("Authorization", "Bearer " + ann["sessionToken"])
        request.add_header("X-Nimbus-API-Token", secret)
        request.add_header("Origin", origin)
        try:
            with urllib.request.urlopen(request, timeout=DEADLINE) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    check(values("https://notes.example.com") == 200, "the token works from its origin")
    check(values("https://evil.example") == 401, "the token is refused from another origin")
    browser.open("/dashboard/tokens")
    check(secret not in browser.driver.page_source, "the secret is shown once only")
    row = [r for r in browser.all("#tokens tr[data-token]") if "web app" in r.text][0]
    check("https://notes.example.com" in row.text, f"the token lists its origin: {row.text!r}")
    browser.submit(row.find_element(By.CSS_SELECTOR, "form"), confirm="Revoke the API token web app")
    browser.expect_notice("API token was revoked")
    check(values("https://notes.example.com") == 401, "a revoked token is refused")


def scenario_activity(browser):
    """Storage per account, this node's traffic as charts, and changes and errors arriving live."""
    ann = sign_up_and_in("ann@example.com", "Ann's phone")
    modify(ann["sessionToken"], "private", [{"operationType": "create", "record": {
        "recordName": "big", "recordType": "Notes", "fields": {"text": {"value": "x" * 20000}}}}])
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open("/dashboard/activity")
    rows = [row.text for row in browser.all("#accounts tbody tr")]
    check(any("ann@example.com" in row and "% of" in row for row in rows), f"Ann's storage is listed: {rows}")
    usage = browser.find("#usage").text
    check(CONTAINER in usage, f"per container: {usage!r}")
    for chart in ["#requests-chart", "#latency-chart"]:
        check(browser.all(f"{chart} svg polyline"), f"{chart} draws lines")
    browser.wait(lambda d: browser.find("#live-state").text == "(live)", "the live stream to open")
    before = len(browser.all("#live-events li"))
    modify(ann["sessionToken"], "private", [{"operationType": "create", "record": {
        "recordName": "live", "recordType": "Notes", "fields": {"text": {"value": "now"}}}}])
    status, _ = call("POST", database("development", "private") + "/records/modify", {"operations": []}, ann["sessionToken"])
    check(status == 400, f"an empty batch is refused: {status}")
    browser.wait(lambda d: len(browser.all("#live-events li")) >= before + 2, "the change and the error to arrive live")
    latest = [item.text for item in browser.all("#live-events li")[:2]]
    check(any("400" in text and "records/modify" in text for text in latest), f"the error arrived: {latest}")
    check(any("200" in text and "records/modify" in text for text in latest), f"the change arrived: {latest}")
    browser.screenshot("activity")


def scenario_export_import(browser):
    """A query's records exported as CSV and JSON, edited, and imported back; the API sees the import."""
    admin = sign_in_api(FIXTURE["adminEmail"])
    for batch in [range(0, 200), range(200, 250)]:
        modify(admin, "public", [{"operationType": "create", "record": {
            "recordName": f"n{i}", "recordType": "Books",
            "fields": {"title": {"value": f"Book {i}"}, "pages": {"value": 100 + i}}}} for i in batch])
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(records_path("?env=development&db=public&type=Books&field=pages&cmp=GREATER_THAN_OR_EQUALS&value=300"))
    # Filters hold together: with one given, the page offers an empty row for another.
    rows = browser.all("#query .filter")
    check(len(rows) == 2, f"one filter given, the page offers a second: {len(rows)} filter rows")
    Select(rows[1].find_element(By.NAME, "field")).select_by_value("pages")
    Select(rows[1].find_element(By.NAME, "cmp")).select_by_value("LESS_THAN")
    rows[1].find_element(By.NAME, "value").send_keys("310")
    browser.submit(browser.find("#query"))
    names = sorted(a.text for a in browser.all("#results tbody td:first-child a"))
    check(names == sorted(f"n{i}" for i in range(200, 210)), f"pages >= 300 and pages < 310 show {names}")
    check(len(browser.all("#query .filter")) == 3, "two filters given, the page offers a third")
    browser.open(records_path("?env=development&db=public&type=Books&field=pages&cmp=GREATER_THAN_OR_EQUALS&value=300"))
    csv_text = browser_download(browser, browser.find("#export-csv").get_attribute("href"))
    lines = csv_text.strip().split("\r\n")
    check(lines[0].split(",")[0] == "recordName" and len(lines) == 1 + 50,
          f"the CSV has a header and the 50 records of the query (pages >= 300): {lines[:3]} … {len(lines)} lines")
    full = browser_download(browser, browser.find("a[download][href*='export/json']").get_attribute("href").replace(
        "&field=pages&cmp=GREATER_THAN_OR_EQUALS&value=300", ""))
    check(len(json.loads(full)["records"]) == 250, "the JSON export holds every record, across query pages")
    header = lines[0].split(",")
    title, pages = header.index("title"), header.index("pages")
    row = ["" for _ in header]
    row[header.index("recordName")], row[title], row[pages] = "new-one", '"Commas, and ""quotes"""', "7"
    edited = lines[0] + "\r\n" + ",".join(row) + "\r\n" + lines[1].replace("Book", "Renamed book") + "\r\n"
    upload = os.path.join(tempfile.mkdtemp(prefix="nimbus-import-"), "books.csv")
    with open(upload, "w") as file:
        file.write(edited)
    browser.find("#import-file").send_keys(upload)
    browser.submit(browser.find("#import-records"))
    browser.expect_notice("records were imported")
    created = lookup(admin, "public", "new-one")
    check(created.get("fields", {}).get("title", {}).get("value") == 'Commas, and "quotes"' and
          created["fields"]["pages"]["value"] == 7, f"the imported record reads {created}")
    renamed = lookup(admin, "public", lines[1].split(",")[0])
    check(renamed["fields"]["title"]["value"].startswith("Renamed book"), f"the imported change reads {renamed}")
    # A file the schema cannot take is refused in words, and nothing of it is saved.
    bad = os.path.join(tempfile.mkdtemp(prefix="nimbus-import-"), "bad.csv")
    with open(bad, "w") as file:
        file.write("recordName,pages\r\nbad-one,twelve\r\n")
    browser.find("#import-file").send_keys(bad)
    browser.submit(browser.find("#import-records"))
    check("whole number" in (browser.error() or ""), f"a bad value shows {browser.error()!r}")
    check(lookup(admin, "public", "bad-one").get("serverErrorCode") == "NOT_FOUND", "the refused file saved nothing")


def sign_in_api_device(email, device):
    status, answer = call("POST", "/auth/1/signin", {"email": email, "password": PASSWORD, "deviceName": device},
                          api_token=False)
    check(status == 200, f"signing in {email} as {device} answered {status}: {answer}")
    return answer["sessionToken"]


def admin_record_name():
    status, answer = call("GET", "/auth/1/me", session=sign_in_api(FIXTURE["adminEmail"]), api_token=False)
    return answer["userRecordName"]


def scenario_forms_need_the_session_token(browser):
    """A form without the session's token (another site's) is refused and changes nothing."""
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(schema_path())
    browser.driver.execute_script("document.querySelector('#create-type input[name=csrf]').value = 'forged'")
    form = browser.find("#create-type")
    browser.fill(form, "name", "Forged")
    browser.submit(form)
    check("did not come from this dashboard" in browser.page_text(), f"a forged form shows {browser.page_text()[:300]!r}")
    browser.open(schema_path())
    check(record_type(browser, "Development", "Forged") is None, "the forged form created a type")


def scenario_injection(browser):
    """Values are text: a record value holding a script shows as those characters and runs nothing."""
    admin = sign_in_api(FIXTURE["adminEmail"])
    hostile = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "{{chrome.csrf}}"]
    modify(admin, "public", [{"operationType": "create", "record": {
        "recordName": f"hostile-{i}", "recordType": "Posts", "fields": {"body": {"value": value}}}}
        for i, value in enumerate(hostile)])
    browser.sign_in(FIXTURE["adminEmail"])
    browser.open(records_path("?env=development&db=public&type=Posts"))
    browser.no_alert()
    cells = [cell.text for cell in browser.all("#results td.value")]
    for value in hostile:
        check(value in cells, f"{value!r} shows as text among {cells}")
    check(not browser.driver.find_elements(By.XPATH, "//script[contains(., 'alert')]"), "a script element came from a value")
    check(not browser.driver.find_elements(By.CSS_SELECTOR, "img[src=x]"), "an image came from a value")
    browser.open(records_path("/hostile-0?env=development&db=public&zone=_defaultZone"))
    browser.no_alert()
    check(browser.find("textarea[name='field.body']").get_attribute("value") == hostile[0], "the edit form holds the text")
    browser.screenshot("injection")


def scenario_layout(browser):
    """Every main page at a desktop's and a phone's size: nothing wider than the screen, a screenshot of each."""
    admin = sign_in_api(FIXTURE["adminEmail"])
    modify(admin, "public", [{"operationType": "create", "record": {
        "recordName": "layout", "recordType": "Items",
        "fields": {"name": {"value": "a long name " * 8}, "tags": {"value": ["one", "two"]},
                   "place": {"value": {"latitude": 1.5, "longitude": 2.5}}}}}])
    status, answer = call("POST", "/kv/1/" + FIXTURE["storeIdentifier"] + "/modify",
                          {"operations": [{"operationType": "set", "key": "theme",
                                           "value": {"type": "STRING", "value": "dark"}}]}, admin)
    check(status == 200, f"setting a key-value answered {status}: {answer}")
    me = admin_record_name()
    browser.sign_in(FIXTURE["adminEmail"])
    pages = {
        "overview": "/dashboard", "schema": schema_path(),
        "records": records_path("?env=development&db=public&type=Items"),
        "record": records_path("/layout?env=development&db=public&zone=_defaultZone"),
        "users": "/dashboard/users", "user": f"/dashboard/users/{me}", "keyvalue": "/dashboard/keyvalue",
        "tokens": "/dashboard/tokens", "documents": "/dashboard/documents", "activity": "/dashboard/activity",
    }
    for size in [DESKTOP, PHONE]:
        browser.set_size(size)
        for name, path in pages.items():
            browser.open(path)
            fits, width, viewport = browser.has_no_horizontal_scroll()
            check(fits, f"{name} is {width} px wide in a {viewport} px viewport")
            browser.screenshot(name)
    # Every control is reachable by keyboard: tabbing from the top reaches the schema's create-type field.
    browser.set_size(DESKTOP)
    browser.open(schema_path())
    body = browser.find("body")
    body.send_keys(Keys.TAB)
    reached = False
    for _ in range(400):
        active = browser.driver.switch_to.active_element
        if active.get_attribute("id") == "type-name":
            reached = True
            break
        active.send_keys(Keys.TAB)
    check(reached, "Tab never reaches the new record type's name")


def scenario_dark_theme(browser):
    """The dark theme follows the system's, with readable contrast in both."""
    browser.sign_in(FIXTURE["adminEmail"])
    for theme in ["light", "dark"]:
        browser.driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": theme}]})
        browser.open("/dashboard")
        colours = browser.driver.execute_script("""
            const style = (el) => getComputedStyle(el);
            const main = document.querySelector('main');
            return [style(document.body).backgroundColor, style(main).color,
                    style(document.querySelector('.muted')).color, style(document.querySelector('a')).color];""")
        background, text, muted, link = [parse_colour(c) for c in colours]
        dark = luminance(background) < 0.2
        check(dark == (theme == "dark"), f"the {theme} theme has background {colours[0]}")
        for name, colour in [("text", text), ("muted text", muted), ("links", link)]:
            ratio = contrast(colour, background)
            check(ratio >= 4.5, f"{name} in the {theme} theme has contrast {ratio:.2f} against the background")
        browser.screenshot(f"overview-{theme}")


def parse_colour(text):
    parts = text[text.index("(") + 1:text.index(")")].split(",")
    return tuple(float(p) for p in parts[:3])


def luminance(rgb):
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    la, lb = sorted([luminance(a), luminance(b)], reverse=True)
    return (la + 0.05) / (lb + 0.05)



def webdav_propfind(user_name, password):
    """A WebDAV client's PROPFIND of the container's folder, signed in with HTTP Basic: its status."""
    request = urllib.request.Request(URL + "/dav/" + FIXTURE["container"] + "/", method="PROPFIND")
    request.add_header("Depth", "0")
    token = base64.b64encode(f"{user_name}:{password}".encode()).decode()
    request.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(request, timeout=DEADLINE) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def scenario_app_passwords(browser):
    """A user makes an app password on their own page, a WebDAV client signs in with it, and signing it out
    revokes it alone."""
    bob = sign_up_and_in("bob@example.com", "Bob's phone")
    check(webdav_propfind("bob@example.com", PASSWORD) == 401, "the account's password must not open WebDAV")
    browser.sign_in("bob@example.com")
    browser.open("/dashboard/users/" + bob["userRecordName"])
    form = browser.find("#app-password-form")
    browser.fill(form, "name", "Laptop Finder")
    browser.submit(form)
    password = browser.find("#app-password").text
    shown = browser.find("#created-app-password").text
    check("bob@example.com" in shown and "/dav/" in shown, f"the page names the user name and address: {shown!r}")
    check(webdav_propfind("bob@example.com", password) == 207, "the app password opens WebDAV")
    browser.open("/dashboard/users/" + bob["userRecordName"])
    check(not browser.all("#app-password"), "the password is shown once, not on the page's next visit")
    rows = [row for row in browser.all("#devices tbody tr") if "Laptop Finder" in row.text]
    check(len(rows) == 1 and "(app password)" in rows[0].text, f"the devices list the app password: {[r.text for r in rows]}")
    browser.submit(rows[0].find_element(By.CSS_SELECTOR, "form"), confirm="Sign Laptop Finder out everywhere")
    browser.expect_notice("signed out everywhere")
    check(webdav_propfind("bob@example.com", password) == 401, "a revoked app password no longer opens WebDAV")
    status, _ = call("GET", "/auth/1/me", session=bob["sessionToken"], api_token=False)
    check(status == 200, f"the phone, signed in with the account's password, stays signed in: {status}")

SCENARIOS = {
    "signIn": scenario_sign_in,
    "tutorial": scenario_tutorial,
    "recordEdits": scenario_record_edits,
    "deploy": scenario_deploy,
    "revoke": scenario_revoke,
    "access": scenario_access,
    "roles": scenario_roles,
    "developers": scenario_developers,
    "documents": scenario_documents,
    "tokens": scenario_tokens,
    "activity": scenario_activity,
    "exportImport": scenario_export_import,
    "formToken": scenario_forms_need_the_session_token,
    "injection": scenario_injection,
    "layout": scenario_layout,
    "darkTheme": scenario_dark_theme,
    "appPasswords": scenario_app_passwords,
}


def main():
    name = sys.argv[1]
    browser = Browser()
    try:
        SCENARIOS[name](browser)
    except Failure as failure:
        browser.screenshot(f"failed-{name}")
        print(f"FAILED {name}: {failure}", file=sys.stderr)
        sys.exit(1)
    finally:
        browser.close()
    print(f"passed {name}")


if __name__ == "__main__":
    main()
