"""Numbers and strings printed the way the JVM and Jackson print them."""

from __future__ import annotations

import decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectd.data._text import decimal_text, java_double, java_float, json_double, json_float, json_quote, to_float32

# Outputs of Double.toString / Float.toString on JDK 19+ (shortest digits).
DOUBLES = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0, "1.0"),
    (-1.0, "-1.0"),
    (0.1, "0.1"),
    (0.001, "0.001"),
    (0.0001, "1.0E-4"),
    (123.456, "123.456"),
    (1234567.0, "1234567.0"),
    (9999999.0, "9999999.0"),
    (1e7, "1.0E7"),
    (12345678.9, "1.23456789E7"),
    (1e16, "1.0E16"),
    (1e20, "1.0E20"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (2.2250738585072014e-308, "2.2250738585072014E-308"),
    (5e-324, "4.9E-324"),
    (1e-5, "1.0E-5"),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
]

FLOATS = [
    (0.0, "0.0"),
    (1.0, "1.0"),
    (0.1, "0.1"),
    (12.34, "12.34"),
    (1e10, "1.0E10"),
    (16777216.0, "1.6777216E7"),
    (3.4028234663852886e38, "3.4028235E38"),
    (1.401298464324817e-45, "1.4E-45"),
    (1.1754943508222875e-38, "1.1754944E-38"),  # JDK <19 printed 1.17549435E-38; both read back
    (3.14159265358979, "3.1415927"),
]


@pytest.mark.parametrize("value, text", DOUBLES)
def test_java_double(value, text):
    assert java_double(value) == text


@pytest.mark.parametrize("value, text", FLOATS)
def test_java_float(value, text):
    assert java_float(value) == text


def test_jackson_quotes_non_finite_numbers():
    assert json_double(float("nan")) == '"NaN"'
    assert json_float(float("-inf")) == '"-Infinity"'
    assert json_float(1e39) == '"Infinity"'
    assert json_double(2.5) == "2.5"


def test_json_quote_matches_jackson():
    assert json_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert json_quote("\b\f\n\r\t") == '"\\b\\f\\n\\r\\t"'
    assert json_quote("\x00\x1a\x7f") == '"\\u0000\\u001A\x7f"'
    assert json_quote("é€😀/") == '"é€😀/"'


def test_decimal_text_is_big_decimal_to_string():
    D = decimal.Decimal
    assert decimal_text(D("1.50")) == "1.50"
    assert decimal_text(D("-0.00")) == "0.00"
    assert decimal_text(D("1E+3")) == "1E+3"
    assert decimal_text(D("0.0000001")) == "1E-7"
    assert decimal_text(D("0.000001")) == "0.000001"


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_doubles_read_back_and_have_javas_shape(value):
    text = java_double(value)
    assert float(text) == value
    mantissa = text.lstrip("-").split("E")[0]
    assert "." in mantissa and mantissa.split(".")[1]
    magnitude = abs(value)
    assert ("E" in text) == (magnitude != 0 and not 1e-3 <= magnitude < 1e7)


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_floats_read_back_with_few_digits(value):
    text = java_float(value)
    assert to_float32(float(text)) == value
    digits = text.lstrip("-").split("E")[0].replace(".", "").strip("0")
    assert len(digits) <= 9
