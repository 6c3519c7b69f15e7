"""Questions that hold personal data (phone numbers, e-mail addresses, ID numbers, …) beside look-alikes that
do not, each with what the ledger may keep of it: the cases the privacy tests share."""

CASES = [
    # mobile numbers, however they are written
    ("打13812345678告诉我", "打[phone]告诉我"),
    ("138-1234-5678", "[phone]"),
    ("138 1234 5678", "[phone]"),
    ("138.1234.5678", "[phone]"),
    ("+86 138 1234 5678", "[phone]"),
    ("+8613812345678", "[phone]"),
    ("008613812345678", "[phone]"),
    ("86-13812345678", "[phone]"),
    ("１３８１２３４５６７８", "[phone]"),
    ("我的电话是15900001111，明天上海天气", "我的电话是[phone]，明天上海天气"),
    ("19912345678北京天气", "[phone]北京天气"),
    # ID numbers: 18 digits (or 17 and X), the old 15-digit ones
    ("110101199003077777", "[id]"),
    ("11010119900307777X", "[id]"),
    ("11010119900307777x的天气", "[id]的天气"),
    ("身份证110101900307777", "身份证[id]"),
    ("１１０１０１１９９００３０７７７７７", "[id]"),
    # bank cards: 13-19 digits that pass the Luhn check, spaced or not
    ("4111111111111111", "[card]"),
    ("4111 1111 1111 1111", "[card]"),
    ("4111-1111-1111-1111", "[card]"),
    ("6222021234567890128", "[card]"),
    ("卡号6222 0212 3456 7890 128帮我查天气", "卡号[card]帮我查天气"),
    # e-mail addresses, glued to Chinese text or full-width
    ("邮箱foo@example.com", "邮箱[email]"),
    ("发到foo.bar+x@mail.example.co.uk谢谢", "发到[email]谢谢"),
    ("foo＠example.com", "[email]"),
    ("联系a_b-c@example.org或者13812345678", "联系[email]或者[phone]"),
    # ... whole, the part before the @ too: every character RFC 5322 allows there, plus-addressing,
    # full-width letters, Chinese text on either side
    ("我是o'brien@example.com，北京明天天气", "我是[email]，北京明天天气"),
    ("user!tag@example.com上海天气", "[email]上海天气"),
    ("a#b$c%d&e*f=g?h^i{j}k|l~m/n@example.com", "[email]"),
    ("邮件zhang.san+weather@mail.example.cn明天会下雨吗", "邮件[email]明天会下雨吗"),
    ("ｚｈａｎｇ＠ｑｑ．ｃｏｍ北京天气", "[email]北京天气"),
    ("ＺＨＡＮＧ_San＠ｅｘａｍｐｌｅ．ｃｏｍ", "[email]"),
    ("发给 Li.Wei-2026@163.com 和 wang@qq.com 谢谢", "发给 [email] 和 [email] 谢谢"),
    ("（foo@example.com）", "（[email]）"),
    # not personal data: left exactly as written
    ("北京明天天气", "北京明天天气"),
    ("2026-12-05北京天气", "2026-12-05北京天气"),
    ("12月5日上海会下雨吗", "12月5日上海会下雨吗"),
    ("温度25度", "温度25度"),
    ("pm2.5多少", "pm2.5多少"),
    ("4111111111111112", "4111111111111112"),  # fails Luhn
    ("订单号202612051234", "订单号202612051234"),  # 12 digits: none of the kinds
    ("1381234567", "1381234567"),  # ten digits: no phone
    ("23812345678", "23812345678"),  # not a mobile prefix
    ("12345", "12345"),
    ("room 1203, 3 days", "room 1203, 3 days"),
    ("@天气助手 北京天气", "@天气助手 北京天气"),
    ("a@b", "a@b"),  # no domain
    ("上海2026/12/05", "上海2026/12/05"),
    ("12/8重庆会下雨吗", "12/8重庆会下雨吗"),
    ("未来15天天气", "未来15天天气"),
    ("ｐｍ２．５多少＠天气助手", "ｐｍ２．５多少＠天气助手"),  # full-width, an @, nothing personal: as written
]


# E-mail addresses in questions, as the router reads them: never a word, so never an unknown place sent to a
# geocoder nor a word kept in the ledger; the stored question keeps none of the address either.
EMAIL_QUESTIONS = [
    "zhangsan@example.com明天天气",
    "我的邮箱是zhang.san+weather@mail.example.cn，北京明天天气",
    "o'brien@example.com北京天气",
    "ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ北京天气",
    "user!tag@x.io北京天气",
    "zhangsan＠qq．com上海天气",
    "请回复到 li.wei+tag@163.com 谢谢，广州后天会下雨吗",
]
