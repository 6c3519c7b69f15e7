"""A web page on another origin calls `serve` from a real browser (Debian's chromium through selenium):
the page on an origin HYBRID_WEATHER_CORS_ORIGINS names reads the answer, after the browser's own
preflight for its Authorization header; a page on any other origin cannot."""

import contextlib
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from live_server import serving

from fake_weather import free_port

PAGE = """<!doctype html><meta charset="utf-8"><pre id="out">waiting</pre><script>
fetch("%s/v1/ask", {method: "POST", headers: {"authorization": "Bearer page-key", "content-type": "application/json"},
                    body: JSON.stringify({query: "上海今天天气"})})
  .then(r => r.json()).then(j => { document.getElementById("out").textContent = "route=" + j.route; })
  .catch(e => { document.getElementById("out").textContent = "refused: " + e.name; });
</script>"""


@contextlib.contextmanager
def page_server(folder):
    """A static web server for FOLDER on its own port of 127.0.0.1: another origin than `serve`'s."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()),
                                 partial(SimpleHTTPRequestHandler, directory=str(folder)))  # fmt: skip
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _outcome(driver, url):
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, 15).until(lambda page: page.find_element("id", "out").text != "waiting")
    return driver.find_element("id", "out").text


def test_a_page_on_an_allowed_origin_reads_answers_and_others_cannot(tmp_path, llm_server, browser):
    site = tmp_path / "site"
    site.mkdir()
    with contextlib.ExitStack() as stack:
        allowed_origin, other_origin = stack.enter_context(page_server(site)), stack.enter_context(page_server(site))
        server = stack.enter_context(serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS="page-key",
                                             HYBRID_WEATHER_CORS_ORIGINS=allowed_origin))  # fmt: skip
        (site / "index.html").write_text(PAGE % server.url, encoding="utf-8")
        assert _outcome(browser, f"{allowed_origin}/index.html") == "route=rule"
        assert _outcome(browser, f"{other_origin}/index.html") == "refused: TypeError"
