#!/usr/bin/python3
"""The page in a real browser: Debian's chromium, headless, driven by chromedriver through python3-selenium.

Starts `gpuplan web` on a free loopback port, waits for /healthz, loads the page, fills a training job, waits for
the Pareto plot and checks it has one point per setup the API returns for the same request (the test posts the
page's own request body to /api/plan itself), hovers a point and reads its tooltip, clicks it and waits for its
export files, switches to Chinese and checks the Chinese labels, saves a screenshot; then the serving mode (a point
per setup, the export) and the fleet mode (a bar per assignment); stops the server.

  web_page_test.py --binary build/gpuplan --screenshot build/artifacts/web-page.png

Exit 77 (CTest SKIP_RETURN_CODE) when chromium, chromedriver or selenium is missing. GPUPLAN_WEB_URL=http://...
points the test at a server already running (development only; then no server is started).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

SKIP = 77
START_TIMEOUT_S = 30       # the server answers /healthz within this
PLOT_TIMEOUT_S = 120       # the first plan search (cold catalog) and the plot within this
STEP_TIMEOUT_S = 60        # each later wait (export, language switch)
WINDOW = (1400, 2200)      # browser window for the screenshot: the editor and the first plots

# The job the test types in: the README's small-team example (LoRA of an 8B model, $500, 24 h, up to 16 GPUs).
JOB_FIELDS = {
    "f-method": "lora",
    "f-tokens": "2e8",
    "f-global-batch": "64",
    "f-seq-len": "2048",
    "f-deadline": "24",
    "f-budget": "500",
    "f-max-gpus": "16",
}
PRESET = "llama-3-8b"


def find_tool(name, fallback):
    path = shutil.which(name)
    if path:
        return path
    return fallback if os.path.exists(fallback) else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthz(base, proc):
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("gpuplan web exited with %d before answering /healthz" % proc.returncode)
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError("no answer from %s/healthz within %d s" % (base, START_TIMEOUT_S))


def post_plan(base, body_text):
    """POST /api/plan?stream=1 as the page does: (status, the CLI's JSON). A server-sent-event answer is read to its
    last event, {"status", "exit_code", "result"}; a plain JSON answer as it is."""
    req = urllib.request.Request(base + "/api/plan?stream=1", data=body_text.encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=PLOT_TIMEOUT_S) as r:
            status, kind, raw = r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        status, kind, raw = e.code, e.headers.get("Content-Type", ""), (e.read() or b"{}").decode()
    if "text/event-stream" not in kind:
        return status, json.loads(raw)
    last = None
    for block in raw.replace("\r\n", "\n").split("\n\n"):
        event, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data and event != "progress":
            last = json.loads("\n".join(data))
    assert last is not None, "the plan stream ended without a result"
    return last["status"], last["result"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True, help="the gpuplan binary")
    ap.add_argument("--screenshot", required=True, help="where to save the PNG")
    args = ap.parse_args()

    chromium = find_tool("chromium", "/usr/bin/chromium")
    driver_path = find_tool("chromedriver", "/usr/bin/chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.ui import Select, WebDriverWait
    except ImportError:
        chromium = None
    if not chromium or not driver_path:
        print("SKIP: needs chromium, chromium-driver and python3-selenium (bash scripts/deps.sh --test)")
        return SKIP

    proc = None
    base = os.environ.get("GPUPLAN_WEB_URL", "").rstrip("/")
    if not base:
        port = free_port()
        proc = subprocess.Popen([args.binary, "web", "--port", str(port)], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        base = "http://127.0.0.1:%d" % port
    driver = None
    ok = False
    try:
        wait_healthz(base, proc)
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for a in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--lang=en-US",
                  "--window-size=%d,%d" % WINDOW):
            opts.add_argument(a)
        if os.geteuid() == 0:
            opts.add_argument("--no-sandbox")
        driver = webdriver.Chrome(service=Service(driver_path), options=opts)
        driver.set_window_size(*WINDOW)
        driver.get(base + "/")
        wait = WebDriverWait(driver, PLOT_TIMEOUT_S)
        step = WebDriverWait(driver, STEP_TIMEOUT_S)

        # English first whatever the last run left in localStorage.
        driver.execute_script("localStorage.setItem('gpuplan.lang', 'en')")
        driver.get(base + "/")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#f-preset option")) > 0)
        Select(driver.find_element(By.ID, "f-preset")).select_by_value(PRESET)
        for field_id, value in JOB_FIELDS.items():
            elem = driver.find_element(By.ID, field_id)
            if elem.tag_name == "select":
                Select(elem).select_by_value(value)
            else:
                elem.clear()
                elem.send_keys(value)
        gen_before = driver.execute_script("return window.gpuplan.gen")
        driver.find_element(By.ID, "run").click()

        # Done: the status says so for a run after the clicks, and the plot holds points.
        wait.until(lambda d: d.execute_script(
            "return window.gpuplan.gen > arguments[0] && document.getElementById('status').dataset.state === 'done'",
            gen_before))
        body = driver.execute_script("return window.gpuplan.lastBody.plan")
        status, api = post_plan(base, body)
        assert status == 200, "POST /api/plan: %d %s" % (status, json.dumps(api)[:400])
        sent = json.loads(body)
        train = api["inputs"]["training"]
        assert train["method"] == "lora" and train["tokens"] == 2e8 and train["global_batch"] == 64, train
        assert api["inputs"]["constraints"]["budget_usd"] == 500, api["inputs"]["constraints"]
        assert sent["job"]["model"]["preset"] == PRESET, sent

        pareto_pts = driver.find_elements(By.CSS_SELECTOR, "#pareto svg circle.pareto-point")
        plan_pts = driver.find_elements(By.CSS_SELECTOR, "#pareto svg circle.plan-point")
        want_pareto = len(api["pareto"])
        want_plans = len([p for p in api["plans"] if p.get("cost_usd") is not None])
        assert want_pareto > 0, "the API returned no Pareto setup for the test job"
        assert len(pareto_pts) == want_pareto, "%d Pareto points drawn, API returned %d" % (len(pareto_pts), want_pareto)
        assert len(plan_pts) == want_plans, "%d plan points drawn, API returned %d" % (len(plan_pts), want_plans)
        rows = driver.find_elements(By.CSS_SELECTOR, "#plans tbody tr")
        assert len(rows) == len(api["plans"]), "%d table rows, %d plans" % (len(rows), len(api["plans"]))
        print("pareto points: %d, plan points: %d (API: %d, %d)" % (len(pareto_pts), len(plan_pts), want_pareto,
                                                                     want_plans))

        # Hover the cheapest Pareto point: the tooltip names its instance. Click it: its export files appear.
        cheapest = min(range(want_pareto), key=lambda i: api["pareto"][i]["cost_usd"])
        point = driver.find_element(By.CSS_SELECTOR, "#pareto circle.pareto-point[data-index='%d']" % cheapest)
        instance = api["pareto"][cheapest]["instance"]
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", point)
        ActionChains(driver).move_to_element(point).perform()
        step.until(lambda d: d.find_element(By.ID, "tooltip").is_displayed())
        tip = driver.find_element(By.ID, "tooltip").text
        assert instance in tip, "the tooltip does not name %s: %r" % (instance, tip)
        driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", point)
        step.until(lambda d: d.find_element(By.ID, "export").get_attribute("data-state") in ("done", "error"))
        export = driver.find_element(By.ID, "export")
        assert export.get_attribute("data-state") == "done", "export failed: " + export.text[:400]
        files = export.find_elements(By.CSS_SELECTOR, "[data-testid=export-file] pre")
        assert files, "no export file shown"
        assert any(instance in f.get_attribute("textContent") for f in files), \
            "the export does not name the selected instance " + instance
        assert "sel" not in (rows[0].get_attribute("class") or ""), "the table row stayed selected"
        step.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#memory svg [data-testid=memory-bar]"))
        step.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#step svg [data-testid=step-bar]"))
        print("export of %s: %d files" % (instance, len(files)))

        # Chinese: the switch relabels the page and is remembered.
        driver.find_element(By.ID, "lang-toggle").click()
        step.until(lambda d: "帕累托前沿" in d.find_element(By.CSS_SELECTOR, "#pareto").find_element(
            By.XPATH, "..").text)
        text = driver.find_element(By.TAG_NAME, "body").text
        for word in ("训练时长", "成本", "显存", "导出启动配置"):
            assert word in text, "no '%s' on the Chinese page" % word
        assert driver.execute_script("return localStorage.getItem('gpuplan.lang')") == "zh"
        assert driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "zh-CN"
        step.until(lambda d: d.find_element(By.ID, "export").get_attribute("data-state") == "done")
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        driver.find_element(By.ID, "lang-toggle").click()   # the screenshot in English, for the README
        step.until(lambda d: "Pareto front" in d.find_element(By.TAG_NAME, "body").text)
        step.until(lambda d: d.find_element(By.ID, "export").get_attribute("data-state") == "done")
        step.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#memory svg [data-testid=memory-bar]"))
        driver.save_screenshot(args.screenshot)
        print("screenshot: " + args.screenshot)

        # Serving and fleet: their plots draw a point per setup and a bar per assignment, the serving export appears.
        for mode, selector in (("serving", "#serving-ttft circle.serving-point"), ("fleet", "#fleet rect.fleet-bar")):
            gen_before = driver.execute_script("return window.gpuplan.gen")
            driver.find_element(By.CSS_SELECTOR, "input[name=mode][value=%s]" % mode).click()
            wait.until(lambda d: d.execute_script(
                "return window.gpuplan.gen > arguments[0] && document.getElementById('status').dataset.state === 'done'",
                gen_before))
            data = driver.execute_script("return window.gpuplan[arguments[0]]", mode)
            assert data, "no %s result: %s" % (mode, driver.find_element(By.ID, "error").text[:400])
            want = len(data["plans"]) if mode == "serving" else \
                len(data["assignments"]) + len(data.get("baseline", {}).get("assignments", []))
            got = len(driver.find_elements(By.CSS_SELECTOR, selector))
            assert got == want and want > 0, "%s: %d drawn, %d in the answer" % (mode, got, want)
            if mode == "serving":
                step.until(lambda d: d.find_element(By.ID, "serving-export").get_attribute("data-state") == "done")
            print("%s: %d drawn" % (mode, got))
        print("PASS")
        ok = True
        return 0
    except Exception as e:  # one line, then the server's output for the log (finally)
        print("FAIL: %s: %s" % (type(e).__name__, e))
        return 1
    finally:
        if driver is not None:
            driver.quit()
        if proc is not None:
            proc.terminate()
            try:
                out, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            if out and not ok:
                sys.stdout.write(out.decode(errors="replace")[-4000:])


if __name__ == "__main__":
    sys.exit(main())
