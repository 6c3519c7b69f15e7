import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point every test's data directory at a fresh temporary folder; clear configuration."""
    monkeypatch.setenv("HYBRID_WEATHER_HOME", str(tmp_path / "home"))
    for name in ("HYBRID_WEATHER_PROVIDER", "HYBRID_WEATHER_OPEN_METEO_URL", "AMAP_KEY", "HYBRID_WEATHER_AMAP_URL",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "HYBRID_WEATHER_MODEL", "HYBRID_WEATHER_LEDGER",
                 "HYBRID_WEATHER_CACHE_TTL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"
