"""The fixtures every test module may ask for by name (pytest finds them here; nothing imports this
file). What test modules share that is not a fixture is in support.py."""

import shutil
import uuid

import pytest

from support import POSTGRES_URL, REDIS_URL, TODAY, in_schema, service_missing


@pytest.fixture(autouse=True, scope="session")
def warm_reading(tmp_path_factory):
    """The process-wide tables of reading and answering (gazetteer, lexicon, jieba's dictionary, pinyin, the
    HTTP client's import) loaded once per worker, before any test's clock starts. Cold they cost a third of a
    second, several seconds on a loaded machine: which test a worker ran first decided whether its deadline
    held. Tests of cold starts run in processes of their own (test_imports, test_model_time)."""
    import httpx2  # noqa: F401

    from hybrid_weather.router import HybridRouter, Settings

    settings = Settings(provider="demo", home=tmp_path_factory.mktemp("warm"))
    with HybridRouter(settings=settings, ledger="off") as router:
        for question in ("杭州明天天七怎么样", "纳尼亚明天天气", "hangzhou weather tomorrow", "北京明天适合出游吗"):
            router.route(question, today=TODAY)
        router.ask("魔都明儿会不会落雨", today=TODAY)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point every test's data directory, and every home a default could be read from (HOME, XDG_*: where
    click.get_app_dir looks), at a fresh temporary folder; clear configuration. A test that starts a
    process gets this environment through subprocess_env(), so no test can write to a user's ledger."""
    monkeypatch.setenv("HYBRID_WEATHER_HOME", str(tmp_path / "home"))
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / "user" / name.lower()))
    for name in (
        "HYBRID_WEATHER_PROVIDER",
        "HYBRID_WEATHER_OPEN_METEO_URL",
        "AMAP_KEY",
        "HYBRID_WEATHER_AMAP_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "HYBRID_WEATHER_MODEL",
        "HYBRID_WEATHER_LEDGER",
        "HYBRID_WEATHER_CACHE_TTL",
        "HYBRID_WEATHER_LEDGER_QUERIES",
        "HYBRID_WEATHER_LLM_SEES",
        "NO_COLOR",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def weather_server():
    """A fake Open-Meteo/AMap server on 127.0.0.1 whose "today" is 2026-11-29."""
    from fake_weather import FakeWeather

    server = FakeWeather(TODAY).start()
    yield server
    server.stop()


@pytest.fixture
def llm_server():
    """A scripted OpenAI-compatible server on 127.0.0.1."""
    # The `openai` import, paid once per worker here rather than inside the first LLM answer a test times:
    # the product pays it before a question's clock too (serve's start, the CLI; LLMAgent.connect).
    import openai  # noqa: F401

    from fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def redis_prefix():
    """A key prefix of this test's own on the test Redis, deleted afterwards; skips (or, under
    HYBRID_WEATHER_REQUIRE_SERVICES=1, fails) when no Redis answers."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as error:
        service_missing(
            f"no Redis at {REDIS_URL} ({error}); start one (redis-server) or set HYBRID_WEATHER_TEST_REDIS_URL"
        )
    prefix = f"hw-test-{uuid.uuid4().hex[:12]}:"
    yield prefix
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()


@pytest.fixture
def admin():
    """A connection to the test database; skips (or fails under HYBRID_WEATHER_REQUIRE_SERVICES=1)
    when no PostgreSQL answers."""
    import psycopg

    try:
        db = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=2)
    except psycopg.Error as error:
        service_missing(
            f"no PostgreSQL at {POSTGRES_URL} ({error}); start one (e.g. pg_ctlcluster 15 main start) "
            "or set HYBRID_WEATHER_TEST_POSTGRES_URL"
        )
    yield db
    db.close()


@pytest.fixture
def pg_url(admin):
    """A ledger URL whose tables live in a schema of this test's own."""
    schema = f"hw_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE SCHEMA {schema}")
    yield in_schema(POSTGRES_URL, schema)
    admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        service_missing("no chromium and chromedriver: apt-get install chromium chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=412,1400"):  # fmt: skip  # a phone's width
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    yield driver
    driver.quit()
