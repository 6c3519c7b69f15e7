import pytest

from hybrid_weather.rules.normalize import MAX_QUERY_CHARS, normalize


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("廣州明天天氣", "广州明天天气"),
        ("Ｓｈａｎｇｈａｉ　今天", "shanghai 今天"),
        ("上海ＰＭ２．５", "上海pm2.5"),
        ("<b>北京</b>明天😀天气？？", "北京 明天 天气"),
        ("上海今天天气'; DROP TABLE users; --", "上海今天天气"),
        ("北京\x00\x07明天\u200b天气", "北京 明天 天气"),
        ("  北京、上海  ", "北京、上海"),
        ("", ""),
        ("🌧️🌧️", ""),
    ],
)
def test_normalize(raw, clean):
    assert normalize(raw) == clean


def test_long_input_is_cut_not_refused():
    assert len(normalize("上海" * 100_000)) == MAX_QUERY_CHARS
