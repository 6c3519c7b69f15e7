"""The savings dashboard in a real headless browser (Debian's chromium, driven through chromedriver by
selenium): the page renders offline, its charts carry the numbers of /v1/savings, a screenshot is kept
as a test artefact (HYBRID_WEATHER_ARTIFACTS, default tests/artifacts/), and behind API keys the browser
signs in through the login form and is refused without it."""

import json
import os
import urllib.request
from pathlib import Path

import pytest
from live_server import post, serving

from fake_openai import answer, tool_calls
from support import TODAY

ARTIFACTS = Path(os.environ.get("HYBRID_WEATHER_ARTIFACTS", Path(__file__).parent / "artifacts"))


def test_the_dashboard_draws_the_savings_numbers(tmp_path, llm_server, browser):
    with serving(tmp_path, llm_server) as server:
        for query in ["上海今天天气", "北京明天天气", "明天冷吗", "广州后天会下雨吗", "深圳今天多少度"] * 3:
            post(f"{server.url}/v1/ask", {"query": query})
        llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
                        answer("明天北京多云，适合出游。", prompt=560, completion=30))  # fmt: skip
        post(f"{server.url}/v1/ask", {"query": "北京明天适合出游吗", "today": TODAY.isoformat()})
        # The demo provider answered (synthetic weather): counted with include_demo, as the page's link does.
        with urllib.request.urlopen(f"{server.url}/v1/savings?days=30&include_demo=1", timeout=10) as response:
            savings = json.loads(response.read())
        browser.get(f"{server.url}/?days=30&include_demo=1")
        page = browser.find_element("tag name", "body")
        assert "What routing saved" in page.text
        assert browser.find_element("id", "requests").text == str(savings["requests"]) == "16"
        bars = browser.find_elements("css selector", "rect.bar")
        drawn = {}
        for bar in bars:
            drawn.setdefault(bar.get_attribute("data-day"), {})[bar.get_attribute("data-route")] = int(
                bar.get_attribute("data-value")
            )
            assert bar.size["height"] >= 0 and bar.size["width"] > 0
        assert drawn == savings["timeline"]
        tallest = max(bars, key=lambda bar: int(bar.get_attribute("data-value")))
        assert tallest.size["height"] > 20  # drawn, not only present
        assert {r.get_attribute("data-route") for r in browser.find_elements("css selector", "rect.latency")} == set(
            savings["latency_ms"]
        )
        spent = [
            float(r.get_attribute("data-value")) for r in browser.find_elements("css selector", "rect.actual_cost_usd")
        ]
        assert sum(spent) == pytest.approx(savings["actual_cost_usd"])
        # Fits a phone's width: nothing wider than the window (headless Chrome's narrowest is 500 px).
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "dashboard.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_behind_keys_the_browser_signs_in_and_sees_the_dashboard(tmp_path, llm_server, browser):
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS="team-key-7,other-key") as server:
        post(f"{server.url}/v1/ask", {"query": "上海今天天气"}, {"authorization": "Bearer team-key-7"})
        browser.get(f"{server.url}/?days=30")
        assert "What routing saved" not in browser.page_source and browser.find_elements("id", "requests") == []
        assert browser.get_cookies() == []

        def sign_in(key):
            from selenium.webdriver.support import expected_conditions
            from selenium.webdriver.support.wait import WebDriverWait

            field = browser.find_element("id", "key")
            field.clear()
            field.send_keys(key)
            browser.find_element("id", "sign-in").click()
            # click() returns before the answer's page is shown: wait until the form it left is gone.
            WebDriverWait(browser, 10).until(expected_conditions.staleness_of(field))

        sign_in("not-a-key")
        assert "not accepted" in browser.find_element("id", "problem").text
        assert browser.find_elements("id", "requests") == [] and browser.get_cookies() == []
        sign_in("team-key-7")
        # The dashboard, with the ledger's numbers: its one answer, the demo provider's, left out and said.
        assert browser.find_element("id", "requests").text == "0"
        assert browser.find_element("id", "demo").get_attribute("data-value") == "1"
        (cookie,) = browser.get_cookies()
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert "team-key-7" not in cookie["value"]
        # Scripts on the page cannot read it, and the report links work on it.
        assert browser.execute_script("return document.cookie") == ""
        browser.get(f"{server.url}/v1/savings?days=30&include_demo=1")
        assert json.loads(browser.find_element("tag name", "body").text)["requests"] == 1
        # Without it, refused again.
        browser.delete_all_cookies()
        browser.get(f"{server.url}/")
        assert browser.find_elements("id", "requests") == [] and browser.find_elements("id", "key")


#: Each rendered label's size in CSS pixels: an SVG label's font size times its chart's scale on screen.
_LABEL_SIZES = """
const sizes = [];
for (const t of document.querySelectorAll('svg text')) {
  sizes.push([t.textContent, parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a]);
}
for (const e of document.querySelectorAll('h1, h2, p, td, th, .figure, small, span')) {
  if (e.textContent.trim()) sizes.push([e.textContent.slice(0, 30), parseFloat(getComputedStyle(e).fontSize)]);
}
return sizes;
"""


def _as_phone(browser):
    """The browser as a phone 390 CSS pixels wide (Chrome's device emulation, as its DevTools do)."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})  # fmt: skip


def test_on_a_phone_with_one_day_of_data_every_label_is_readable(tmp_path, llm_server, browser):
    import re

    _as_phone(browser)
    with serving(tmp_path, llm_server) as server:
        for query in ["上海今天天气", "北京明天天气", "明天冷吗"]:
            post(f"{server.url}/v1/ask", {"query": query})
        browser.get(f"{server.url}/?days=30&include_demo=1")  # the demo provider answered: counted when asked
        assert browser.execute_script("return window.innerWidth") == 390
        small = [(text, size) for text, size in browser.execute_script(_LABEL_SIZES) if size < 12]
        assert small == []
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
        # One day is one bar among a week's slots, not a block as wide as the chart.
        chart = browser.find_element("css selector", "svg[aria-label='requests per day by route']")
        bar = max(browser.find_elements("css selector", "rect.bar"), key=lambda rect: rect.size["width"])
        assert bar.size["width"] < chart.size["width"] / 5
        # Money at one precision everywhere; the misses (no LLM answer here) say there are none.
        page = browser.find_element("tag name", "body").text
        amounts = re.findall(r"\$[\d,]+(?:\.\d+)?", page)
        assert amounts and all(re.fullmatch(r"\$[\d,]+\.\d{6}", amount) for amount in amounts), amounts
        assert page.count("no data in this window") == 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "dashboard-phone.png"
        assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 5_000


def test_an_empty_window_says_so_in_every_section(tmp_path, llm_server, browser):
    _as_phone(browser)
    with serving(tmp_path, llm_server) as server:
        browser.get(f"{server.url}/?days=1")
        page = browser.find_element("tag name", "body").text
        assert page.count("no data in this window") == 4  # requests, spend, latency, misses
        assert browser.find_elements("css selector", "svg") == []
