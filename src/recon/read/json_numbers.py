"""A record's compared JSON fields with every digit of their numbers (issue 70).

DuckDB's JSON reader (yyjson) keeps an integer exactly (beyond 64 bits as its text) but reads any
other number as a double: ``0.12345678901234567890123`` comes back as ``0.12345678901234568``,
``1e-400`` as ``0.0``, in a field and inside an object. A number loses nothing when its mantissa
has at most 15 digit or point characters and its exponent at most two digits (a double holds
every such decimal, and prints it back as the same value), so only a value with a longer number
token (:data:`LONG_NUMBER`) is read a second time, from a copy in which each long number token
is a JSON string marked with a leading U+0001 (:func:`marked_text`). A field that comes back
marked was that number, and is its text; an object or array gets its marked numbers back as
bare numbers. Everything else is what the first reading gave, so a record without long numbers
costs one regular expression over its compared fields.
"""

from __future__ import annotations

#: A number token a double may not hold: 16 or more digit or point characters, or an exponent
#: of three or more digits, where a JSON value starts (after ``:``, ``,`` or ``[``).
_LONG = r"-?(?:[0-9.]{16,}(?:[eE][+-]?[0-9]+)?|[0-9.]+[eE][+-]?[0-9]{3,})"
LONG_NUMBER = r"[:,\[]\s*" + _LONG
#: The same digits anywhere: cheaper to look for (a third of the time), and nearly always absent.
_LONG_ANYWHERE = "[0-9.]{16}|[eE][+-]?[0-9]{3}"

#: A JSON string (kept as it is) or a long number token: scanning from the left, a string is
#: always consumed whole, so no digits inside one are taken for a number.
_TOKEN = rf'("(?:[^"\\]|\\.)*")|({_LONG})'

#: What a marked number looks like inside an object or array as DuckDB prints it.
_MARKED_IN_JSON = r'"\\u0001([^"]*)"'


def marked_text(text: str) -> str:
    """``text`` (JSON) with each long number token a string of U+0001 and the token: those
    where a value starts. The same text inside a string would be marked too, but that breaks
    the JSON (after the string the mark closes comes ``\\u0001``, no JSON token), and then
    :func:`scanned_text` marks it."""
    return f"regexp_replace({text}, '([:,\\[]\\s*)({_LONG})', '\\1\"\\\\u0001\\2\"', 'g')"


def scanned_text(text: str) -> str:
    """:func:`marked_text` scanning every string (four times slower: each string is a match).

    Each token is first wrapped in U+0002 .. U+0003 (a string gets an empty pair after it, as
    a regular expression's replacement cannot tell the alternatives apart), then the non-empty
    pairs become marked strings and the empty ones go. Neither character can stand unescaped
    in valid JSON, so none of the value's own is taken for one.
    """
    wrapped = f"regexp_replace({text}, '{_TOKEN}', '\\1' || chr(2) || '\\2' || chr(3), 'g')"
    marked = (
        f"regexp_replace({wrapped}, chr(2) || '([^' || chr(3) || ']+)' || chr(3), "
        "'\"\\\\u0001\\1\"', 'g')"
    )
    return f"replace({marked}, chr(2) || chr(3), '')"


def exact_fields(paths: list[str], slots: list[str], value_text: str) -> str:
    """The compared fields (a ``VARCHAR[]``), each with the digits of its numbers.

    :param paths: the fields' JSON paths, as SQL literals.
    :param slots: the same fields as the first reading gave them (SQL expressions).
    :param value_text: the record value as text (SQL expression).
    """
    listed = f"[{', '.join(paths)}]"
    read = (
        f"coalesce(TRY(json_extract_string({marked_text(value_text)}, {listed})), "
        f"TRY(json_extract_string({scanned_text(value_text)}, {listed})))"
    )
    items = ", ".join(_exact_item(f"m[{i}]", slot) for i, slot in enumerate(slots, 1))
    doubles = " ".join(f"WHEN regexp_matches({s}, '[0-9][.eE]') THEN true" for s in slots)
    plain = f"[{', '.join(slots)}]"
    # A number the first reading took as a double prints with a point or an exponent: without
    # one in any field, nothing was lost and the value is not looked at again. CASE, not AND or
    # OR, which compute both sides for every row. The list is bound to a name with a
    # one-element list_transform (DuckDB has no let).
    return (
        f"CASE WHEN NOT (CASE {doubles} ELSE false END) THEN {plain} "
        f"WHEN NOT regexp_matches({value_text}, '{_LONG_ANYWHERE}') THEN {plain} "
        f"WHEN NOT regexp_matches({value_text}, '{LONG_NUMBER}') THEN {plain} "
        f"ELSE list_transform([{read}], m -> [{items}])[1] END"
    )


def _exact_item(marked: str, slot: str) -> str:
    """One field: ``marked`` is its reading from a marked text, ``slot`` the first one.

    A marked reading is a long number's text, unless the field's own string starts with U+0001;
    an object or array gets its marked numbers back as numbers, unless it holds U+0001 (as
    ``\\u0001``) of its own."""
    return (
        f"(CASE WHEN {marked} IS NULL OR {slot} IS NULL THEN {slot} "
        f"WHEN starts_with({marked}, chr(1)) AND NOT starts_with({slot}, chr(1)) "
        f"THEN substr({marked}, 2) "
        f"WHEN (starts_with({marked}, '{{') OR starts_with({marked}, '[')) "
        f"AND NOT contains({slot}, '\\u0001') "
        f"THEN regexp_replace({marked}, '{_MARKED_IN_JSON}', '\\1', 'g') "
        f"ELSE {slot} END)"
    )
