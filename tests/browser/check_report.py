#!/usr/bin/env python3
"""Opens report.html files in headless Chromium, as a person would, and checks each page.

    check_report.py CHROMIUM SCREENSHOT_DIR PAGE.html:EXIT:MIN_CHARTS:TEXT[|TEXT...] ...

For each page: it loads with no console error, no uncaught exception and no network request
(only the file itself; anything else would be fetched from outside); every chart (svg) has a
non-zero size, and there are at least MIN_CHARTS; the verdict banner says the exit code EXIT (its data-exit) and the same word as
the expected verdict; every TEXT (e.g. a cell name with '<', '&' or quotes) appears as text on
the page, unescaped once, so it was escaped exactly once. On a failure the page's screenshot is
written into SCREENSHOT_DIR. Prints one line per page; exits 1 when a page failed.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fds 3 and 4,
NUL-terminated JSON), with nothing but Python's standard library.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="bm-chromium-")
        to_child_r, self.to_child_w = os.pipe()
        self.from_child_r, from_child_w = os.pipe()

        def fds():
            # Chromium reads commands from fd 3 and writes answers to fd 4.
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # The pipes are dup2()ed onto 3 and 4 in the child, which must then survive
            # the closing of inherited fds.
            preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child_w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_child_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=30):
        want = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.read(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            msg = self.read(deadline)
            self.events.append(msg)
            if msg.get("method") == method:
                return self.events.pop()

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


MEASURE = """JSON.stringify({
  svgs: [...document.querySelectorAll('svg')].map(s => {
    const r = s.getBoundingClientRect(); return [r.width, r.height]; }),
  verdict: (document.getElementById('verdict') || {}).textContent || '',
  exit: (document.getElementById('verdict') || {dataset: {}}).dataset.exit,
  text: document.body.innerText + ' ' +
        [...document.querySelectorAll('svg text, svg title')].map(t => t.textContent).join(' ')
})"""


def problems_of(browser, page, want_exit, min_charts, texts):
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        browser.call(domain + ".enable", session=session)
    browser.events.clear()
    url = "file://" + os.path.abspath(page)
    browser.call("Page.navigate", {"url": url}, session=session)
    browser.wait_event("Page.loadEventFired")
    result = browser.call("Runtime.evaluate", {"expression": MEASURE, "returnByValue": True},
                          session=session)
    seen = json.loads(result["result"]["value"])
    problems = []
    for e in browser.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            problems.append(f"console error: {p.get('args')}")
        elif m == "Runtime.exceptionThrown":
            problems.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            problems.append(f"log error: {p['entry'].get('text')}")
        elif m == "Network.requestWillBeSent":
            req = p.get("request", {}).get("url", "")
            if req != url and not req.startswith("data:"):
                problems.append(f"network request: {req}")
    if len(seen["svgs"]) < min_charts:
        problems.append(f"{len(seen['svgs'])} charts (svg) on the page, expected {min_charts}+")
    for i, (w, h) in enumerate(seen["svgs"]):
        if w <= 0 or h <= 0:
            problems.append(f"chart {i + 1} has size {w}x{h}")
    if seen["exit"] != str(want_exit):
        problems.append(f"verdict says exit {seen['exit']}, expected {want_exit}")
    for t in texts:
        if t not in seen["text"]:
            problems.append(f"text {t!r} not shown on the page")
    if problems:
        shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=session)
        return problems, shot["data"], seen
    browser.call("Target.closeTarget", {"targetId": target})
    return problems, None, seen


def main():
    exe, shots, pages = sys.argv[1], sys.argv[2], sys.argv[3:]
    browser = Browser(exe)
    failed = 0
    try:
        for spec in pages:
            page, want_exit, min_charts, texts = spec.split(":", 3)
            texts = [t for t in texts.split("|") if t]
            problems, shot, seen = problems_of(browser, page, want_exit, int(min_charts), texts)
            name = os.path.basename(os.path.dirname(page))
            if problems:
                failed += 1
                import base64
                path = os.path.join(shots, name + ".png")
                with open(path, "wb") as f:
                    f.write(base64.b64decode(shot))
                print(f"FAIL {page}: {'; '.join(problems)} (screenshot {path})")
            else:
                print(f"ok   {page}: {len(seen['svgs'])} charts, {seen['verdict'][:80]!r}")
    finally:
        browser.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
