"""Forms made from an answer type's JSON schema (mcec/console/forms.py): each kind of field, the
answer a submitted form makes (then validated by the answer type itself, as `runs answer` does),
and pydantic's errors put at the fields they name."""

from __future__ import annotations

import json
from enum import Enum
from typing import Literal

import pytest
from pydantic import BaseModel, Field as PydanticField, TypeAdapter, ValidationError

from mcec.console.forms import FormError, answer_of, errors_by_field, form_of


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Line(BaseModel):
    sku: str
    quantity: int = PydanticField(ge=1)


class Order(BaseModel):
    """An order to approve."""

    approve: bool
    rush: bool = False
    note: str = ""
    colour: Colour
    size: Literal[1, 2, 3] = 2
    discount: float | None = None
    lines: list[Line]
    tags: list[str] = []
    extra: dict[str, int] = {}
    either: int | str = 0


def schema() -> dict[str, object]:
    return Order.model_json_schema()


def test_each_kind_of_field() -> None:
    form = form_of(schema())
    assert form.kind == "object" and form.description == "An order to approve."
    fields = {f.name: f for f in form.children}
    assert fields["answer.approve"].kind == "choice" and fields["answer.approve"].required  # no default: yes or no
    assert fields["answer.approve"].choices == (("true", "yes"), ("false", "no"))
    assert fields["answer.rush"].kind == "checkbox" and fields["answer.rush"].initial is False
    assert fields["answer.note"].kind == "text" and not fields["answer.note"].required
    assert fields["answer.colour"].kind == "choice"  # through its $ref
    assert fields["answer.colour"].choices == (('"red"', "red"), ('"blue"', "blue"))
    assert fields["answer.size"].choices == (("1", "1"), ("2", "2"), ("3", "3"))
    assert fields["answer.discount"].kind == "number" and fields["answer.discount"].nullable
    lines = fields["answer.lines"]
    assert lines.kind == "list" and lines.item is not None and lines.item.kind == "object"
    assert [c.name for c in lines.item.children] == ["answer.lines.__i__.sku", "answer.lines.__i__.quantity"]
    assert ("min", "1") in lines.item.children[1].limits and ("step", "1") in lines.item.children[1].limits
    assert fields["answer.tags"].item is not None and fields["answer.tags"].item.kind == "text"
    assert fields["answer.extra"].kind == "json"  # a dict: a form cannot say it
    assert fields["answer.either"].kind == "json"  # a union
    assert form_of(TypeAdapter(bool).json_schema()).kind == "choice"
    assert form_of(TypeAdapter(tuple[int, str]).json_schema()).kind == "json"


def test_a_submitted_form_is_the_answer_the_type_validates() -> None:
    form = form_of(schema())
    submitted = {
        "answer.approve": ["true"], "answer.rush": ["true"], "answer.note": ["ok"], "answer.colour": ['"blue"'],
        "answer.size": ["3"], "answer.discount": [""],
        "answer.lines.0#": [""], "answer.lines.0.sku": ["A"], "answer.lines.0.quantity": ["2"],
        "answer.lines.3#": [""], "answer.lines.3.sku": ["B"], "answer.lines.3.quantity": ["1"],
        "answer.extra": ['{"a": 1}'], "answer.either": ['"x"'],
    }
    value = answer_of(form, submitted)
    assert value == {"approve": True, "rush": True, "note": "ok", "colour": "blue", "size": 3, "discount": None,
                     "lines": [{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}], "tags": [],
                     "extra": {"a": 1}, "either": "x"}
    Order.model_validate(value)
    left = answer_of(form, {"answer.approve": ["false"], "answer.colour": ['"red"']})
    assert left == {"approve": False, "rush": False, "colour": "red", "discount": None, "lines": [], "tags": []}


def test_a_json_field_that_is_not_json_is_refused_at_its_field() -> None:
    with pytest.raises(FormError) as caught:
        answer_of(form_of(schema()), {"answer.extra": ["{nope"]})
    assert caught.value.name == "answer.extra"


def test_pydantics_errors_go_to_the_fields_they_name() -> None:
    form = form_of(schema())
    value = answer_of(form, {"answer.colour": ['"red"'], "answer.lines.0#": [""], "answer.lines.0.sku": ["A"],
                             "answer.lines.0.quantity": ["0"], "answer.extra": ['{"a": "x"}']})
    with pytest.raises(ValidationError) as caught:
        Order.model_validate(value)
    # the message `runs answer` gives (agentmonad.durable.journal: loc joined by dots, then pydantic's msg)
    errors = [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in caught.value.errors()]
    message = f"bad answer to order: {'; '.join(errors)} (the run keeps waiting)"
    placed, loose = errors_by_field(form, message, "order")
    assert placed == {
        "answer.approve": ["Field required"],
        "answer.lines.0.quantity": ["Input should be greater than or equal to 1"],
        "answer.extra": ["Input should be a valid integer, unable to parse string as an integer"],  # in the editor
    }
    assert loose == []
    assert errors_by_field(form, "run r was cancelled", "order") == ({}, ["run r was cancelled"])


def test_a_number_that_does_not_parse_is_left_for_the_type_to_refuse() -> None:
    form = form_of(TypeAdapter(Line).json_schema())
    value = answer_of(form, {"answer.sku": ["A"], "answer.quantity": ["two"]})
    assert value == {"sku": "A", "quantity": "two"}
    assert json.dumps(value)
