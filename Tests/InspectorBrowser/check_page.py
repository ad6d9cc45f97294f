#!/usr/bin/env python3
"""Browser check of the ReduxStore inspector page, as a person would use it.

Usage:
  python3 check_page.py URL EXPECTED_NEWEST [--rows N] [--select V]
                        [--filter TEXT --filtered-rows M]
                        [--restore-allowed | --restore-forbidden] [--screenshot PATH]

URL is the page's address with its token (http://127.0.0.1:PORT/?token=T). EXPECTED_NEWEST is
the newest version the program reached. Needs the PyPI package `selenium` and Debian's
`chromium` and `chromium-driver` (headless). Prints `PASS name` or `FAIL name: detail` for
each check and exits 1 if any failed.
"""
import argparse
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import (JavascriptException, NoAlertPresentException,
                                        StaleElementReferenceException, TimeoutException,
                                        WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

failures = []


def report(name, ok, detail=""):
    if ok:
        print("PASS " + name, flush=True)
    else:
        print("FAIL %s: %s" % (name, detail), flush=True)
        failures.append(name)


def text_of(driver, element_id):
    try:
        return driver.find_element(By.ID, element_id).text.strip()
    except WebDriverException:
        return None


def int_text(driver, element_id):
    t = text_of(driver, element_id)
    try:
        return int(t)
    except (TypeError, ValueError):
        return None


def read_all(driver, selector, read=lambda e: e.text, tries=50):
    """read(e) for each element `selector` finds (None values left out), found and read again when
    the page re-rendered them between the two (a live log or patch list redraws as versions
    arrive)."""
    for _ in range(tries):
        try:
            return [v for v in (read(e) for e in driver.find_elements(By.CSS_SELECTOR, selector)) if v is not None]
        except StaleElementReferenceException:
            time.sleep(0.1)
    return [v for v in (read(e) for e in driver.find_elements(By.CSS_SELECTOR, selector)) if v is not None]


def wait_until(driver, timeout, cond, poll=0.1):
    """Waits until cond(driver) is truthy; returns its value, or None on timeout."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=poll,
                             ignored_exceptions=(StaleElementReferenceException,)).until(cond)
    except TimeoutException:
        return None


def start_browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900",
              "--disable-gpu", "--no-first-run", "--no-default-browser-check"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Prompts are answered by the test itself (switch_to.alert), never automatically.
    opts.set_capability("unhandledPromptBehavior", "ignore")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_window_size(1400, 900)
    driver.set_page_load_timeout(30)
    return driver


ROWS_JS = """
const log = document.getElementById('log');
const vs = [...log.querySelectorAll('.log-row')].map(r => Number(r.dataset.version));
return {versions: vs, scrollTop: log.scrollTop, clientHeight: log.clientHeight,
        scrollHeight: log.scrollHeight};
"""


def find_row(driver, version, timeout=20):
    """Scrolls the virtualised log (bisection over scrollTop, versions ascend) until the row
    with data-version == version is in the DOM and in view; returns it or None."""
    deadline = time.time() + timeout
    lo, hi = 0, None
    last_sig = None
    while time.time() < deadline:
        info = driver.execute_script(ROWS_JS)
        vs = info["versions"]
        if hi is None:
            hi = info["scrollHeight"]
        if version in vs:
            row = driver.find_element(By.CSS_SELECTOR, '#log .log-row[data-version="%d"]' % version)
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", row)
            return wait_until(driver, 5, lambda d: d.find_element(
                By.CSS_SELECTOR, '#log .log-row[data-version="%d"]' % version))
        top = info["scrollTop"]
        if not vs:
            target = 0 if top > 0 else None
            if target is None:
                return None
        elif min(vs) < version < max(vs):
            return None  # between rendered rows but not one of them: not in the (filtered) log
        elif version < min(vs):
            hi = top
            target = (lo + hi) // 2
        else:
            lo = top + 1
            target = (lo + hi) // 2
        if hi - lo < 2 or target == top:
            return None
        driver.execute_script("document.getElementById('log').scrollTop = arguments[0];", target)
        sig = (target,)
        if sig == last_sig:
            return None
        last_sig = sig
        # wait until the page has rendered rows for the new position
        wait_until(driver, 3, lambda d: d.execute_script(
            "const l=document.getElementById('log');"
            "const rs=[...l.querySelectorAll('.log-row')];"
            "return rs.some(r => { const t = r.offsetTop; return t >= l.scrollTop - 30 && t <= l.scrollTop + l.clientHeight; });"),
            poll=0.05)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("expected_newest", type=int)
    ap.add_argument("--rows", type=int, help="expected row count without filter (default: min(EXPECTED_NEWEST, 1000))")
    ap.add_argument("--select", type=int, help="a version whose row to click; its patch and a changed tree node must show")
    ap.add_argument("--filter", help="identifier filter text to type")
    ap.add_argument("--filtered-rows", type=int, help="row count expected with --filter")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--restore-allowed", action="store_true")
    g.add_argument("--restore-forbidden", action="store_true")
    ap.add_argument("--screenshot", help="save a PNG of the page after the checks")
    args = ap.parse_args()
    if (args.filter is None) != (args.filtered_rows is None):
        ap.error("--filter and --filtered-rows go together")
    expected_rows = args.rows if args.rows is not None else min(args.expected_newest, 1000)

    driver = start_browser()
    try:
        driver.get(args.url)

        # 1. the page connects and shows the newest version and the log
        ok = wait_until(driver, 30, lambda d: int_text(d, "newest-version") == args.expected_newest
                        and (int_text(d, "row-count") or 0) > 0)
        report("newest-version", int_text(driver, "newest-version") == args.expected_newest,
               "shows %r, expected %d (status: %r)" % (text_of(driver, "newest-version"), args.expected_newest,
                                                      text_of(driver, "status")))
        if not ok:
            report("page loaded", False, "newest-version/row-count not shown within 30 s")
            return
        # the log is filled from hello in one go; give a late change a moment to land
        wait_until(driver, 5, lambda d: int_text(d, "row-count") == expected_rows)
        rc = int_text(driver, "row-count")
        report("row-count", rc == expected_rows, "shows %r, expected %d" % (rc, expected_rows))

        rendered = len(driver.find_elements(By.CSS_SELECTOR, "#log .log-row"))
        report("log virtualised", 0 < rendered <= 200,
               "%d .log-row elements in the DOM for %r entries" % (rendered, rc))

        root = wait_until(driver, 15, lambda d: d.find_elements(By.CSS_SELECTOR, '#tree .tree-node[data-pointer=""]'))
        report("state tree root", bool(root), "no .tree-node with data-pointer=\"\" in #tree")

        # 2. selecting a row shows its patch and highlights the changed node in the tree
        if args.select is not None:
            row = find_row(driver, args.select)
            if row is None:
                report("select row %d" % args.select, False, "no row with data-version=%d found by scrolling" % args.select)
            else:
                try:
                    row.click()
                except StaleElementReferenceException:
                    driver.find_element(By.CSS_SELECTOR, '#log .log-row[data-version="%d"]' % args.select).click()
                ops = wait_until(driver, 10, lambda d: d.find_elements(By.CSS_SELECTOR, "#details #patch .patch-op"))
                shown = text_of(driver, "details") or ""
                report("select row %d shows patch" % args.select, bool(ops) and str(args.select) in shown,
                       "%d .patch-op in #patch; details: %r" % (len(ops or []), shown[:200]))
                changed = wait_until(driver, 15, lambda d: [e for e in d.find_elements(By.CSS_SELECTOR, "#tree .tree-node.changed")
                                                            if e.is_displayed()])
                report("select row %d highlights changed tree node" % args.select, bool(changed),
                       "no visible .tree-node.changed in #tree (patch paths: %r)"
                       % read_all(driver, "#patch .patch-op .path")[:5])
                if changed:
                    ptrs = set(read_all(driver, "#tree .tree-node.changed",
                                        lambda e: e.get_attribute("data-pointer") if e.is_displayed() else None))
                    paths = set(read_all(driver, "#patch .patch-op .path"))
                    paths = {'' if p == '"" (root)' else p for p in paths}
                    report("changed node matches a patch path", bool(ptrs & paths),
                           "changed %r, patch paths %r" % (sorted(ptrs)[:5], sorted(paths)[:5]))

        # 3. the identifier filter narrows the log
        if args.filter is not None:
            box = driver.find_element(By.ID, "filter")
            box.clear()
            box.send_keys(args.filter)
            wait_until(driver, 10, lambda d: int_text(d, "row-count") == args.filtered_rows)
            rc = int_text(driver, "row-count")
            report("filter %r" % args.filter, rc == args.filtered_rows,
                   "row-count shows %r, expected %d" % (rc, args.filtered_rows))
            idents = read_all(driver, "#log .log-row .c-id")
            bad = [t for t in idents if args.filter.lower() not in t.lower()]
            report("filtered rows match", not bad, "rows not matching: %r" % bad[:5])
            box.send_keys(Keys.CONTROL, "a")
            box.send_keys(Keys.DELETE)
            wait_until(driver, 10, lambda d: int_text(d, "row-count") == expected_rows)
            rc = int_text(driver, "row-count")
            report("filter cleared", rc == expected_rows, "row-count shows %r, expected %d" % (rc, expected_rows))

        # 4. time travel
        if args.restore_forbidden:
            found = driver.find_elements(By.CSS_SELECTOR, "#restore, .restore-button")
            report("restore absent", not found, "%d restore element(s) in the DOM" % len(found))
        if args.restore_allowed:
            driver.execute_script("const l = document.getElementById('log'); l.scrollTop = l.scrollHeight;")
            rows_with = wait_until(driver, 5, lambda d: d.find_elements(By.CSS_SELECTOR, "#log .log-row .restore-button"))
            report("restore buttons on kept rows", bool(rows_with), "no .restore-button in the visible log rows")
            sel = Select(driver.find_element(By.ID, "version-select"))
            kept = [o.get_attribute("value") for o in sel.options if o.get_attribute("value")]
            if not kept:
                report("restore", False, "#version-select lists no kept version")
            else:
                # a recent kept version (still kept after one more version is made)
                version = kept[min(1, len(kept) - 1)]
                sel.select_by_value(version)
                before = int_text(driver, "newest-version")
                btn = wait_until(driver, 5, lambda d: (lambda b: b if b.is_enabled() else None)(d.find_element(By.ID, "restore")))
                if btn is None:
                    report("restore", False, "#restore missing or disabled after choosing version %s" % version)
                else:
                    btn.click()
                    alert = wait_until(driver, 5, EC.alert_is_present())
                    if not alert:
                        report("restore asks for confirmation", False, "no confirm dialog")
                    else:
                        report("restore asks for confirmation", True)
                        alert.accept()
                        grown = wait_until(driver, 15, lambda d: int_text(d, "newest-version") == (before or 0) + 1)
                        report("restore adds a version", bool(grown),
                               "newest-version %r -> %r" % (before, text_of(driver, "newest-version")))
                        wait_until(driver, 5, lambda d: int_text(d, "row-count") == expected_rows + 1)
                        rc = int_text(driver, "row-count")
                        report("restore appears in the log", rc == expected_rows + 1,
                               "row-count %r, expected %d" % (rc, expected_rows + 1))

        # 5. nothing went wrong in the page's script
        try:
            logs = driver.get_log("browser")
        except WebDriverException:
            logs = []
        severe = [l["message"] for l in logs if l.get("level") == "SEVERE" and "favicon" not in l.get("message", "")]
        report("no script errors", not severe, "; ".join(severe)[:500])
    finally:
        if args.screenshot:
            try:
                try:
                    driver.switch_to.alert.dismiss()
                except NoAlertPresentException:
                    pass
                wait_until(driver, 2, lambda d: d.execute_script(
                    "return new Promise(r => requestAnimationFrame(() => r(true)))"), poll=0.05)
                driver.save_screenshot(args.screenshot)
                print("screenshot: " + args.screenshot, flush=True)
            except (WebDriverException, JavascriptException) as e:
                report("screenshot", False, str(e))
        driver.quit()


if __name__ == "__main__":
    try:
        main()
    except WebDriverException as e:
        report("browser", False, str(e).splitlines()[0] if str(e) else repr(e))
    sys.exit(1 if failures else 0)
