"""A recording's text is made once and checked for secrets on it (agentmonad.record): the walk that
masks them runs only when the text holds one, so the check must see every secret a string holds,
however JSON escapes it, and every URL's user info; a recording with none is itself, unchanged."""

from __future__ import annotations

import json

from agentmonad.record import MASK, Recording


def _recording(value: object, key: str = "note") -> Recording:
    effect = {"key": "0", "kind": "step", "step": "s", "site": "x.mce:1:1 (s)",
              "result": {"ok": {key: value}, "state": None}, "usage": []}
    return Recording("x.mce", "0" * 64, "p", "compiled", "in", None, (effect,), {"ok": "out", "state": None})


def _masked(recording: Recording, secrets: tuple[str, ...]) -> dict[str, object]:
    masked = recording.redacted(secrets)
    data = json.loads(masked.text())
    assert isinstance(data, dict)
    return data


def test_a_secret_that_json_escapes_is_still_found_and_masked() -> None:
    for secret in ('k"e\\y', "clé-ü", "tab\there", "nl\nx"):
        data = _masked(_recording(f"the key is {secret}!"), (secret,))
        effect = data["effects"][0]  # type: ignore[index]
        assert effect["result"]["ok"]["note"] == f"the key is {MASK}!", secret


def test_url_user_info_in_a_value_or_a_key_is_masked() -> None:
    data = _masked(_recording("see https://ann:pw@example.com/x"), ())
    assert data["effects"][0]["result"]["ok"]["note"] == f"see https://{MASK}@example.com/x"  # type: ignore[index]
    data = _masked(_recording(1, key="postgresql://u:p@db/x"), ())
    assert data["effects"][0]["result"]["ok"] == {f"postgresql://{MASK}@db/x": 1}  # type: ignore[index]


def test_a_recording_with_nothing_to_mask_is_itself_and_its_text_is_made_once() -> None:
    recording = _recording("mail ann@example.com, no key")
    assert recording.redacted(("sk-secret",)) is recording
    assert recording.text() is recording.text()
    assert json.loads(recording.text())["effects"][0]["result"]["ok"]["note"] == "mail ann@example.com, no key"


def test_both_encoders_of_the_text_write_the_same_json() -> None:
    """pydantic-core's encoder where it takes ``inf_nan_mode`` (pydantic ≥ 2.7), else the standard
    library's: the same values either way, NaN and non-ASCII included."""
    import math

    from agentmonad.record import _pydantic_json, _stdlib_json

    value = {"a": [1, 2.5, 1e100, "é\u2028\n\"\\"], "b": None, "c": {"d": True}, "n": float("nan")}
    for encode in (_pydantic_json, _stdlib_json):
        text = encode(value)
        assert "\n" not in text  # one value a line
        back = json.loads(text)
        assert math.isnan(back.pop("n")) and back == {k: v for k, v in value.items() if k != "n"}
