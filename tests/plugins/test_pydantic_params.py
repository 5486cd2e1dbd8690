"""A plugin parameter may be a pydantic model: its schema is nested, and the tool gets an instance."""

from __future__ import annotations

from typing import Literal

import jsonschema
from pydantic import BaseModel, Field

from flowcall.core.messages import ToolCall
from flowcall.tools.base import RunContext
from flowcall.tools.execute import check_call
from flowcall.tools.python_plugins import build_tool


class Address(BaseModel):
    city: str = Field(description="城市")
    street: str | None = None


class Order(BaseModel):
    item: str
    quantity: int = Field(ge=1)
    ship_to: Address
    speed: Literal["standard", "express"] = "standard"


def place_order(order: Order, note: str = "") -> str:
    """Place an order.

    Args:
        order: what to send where
        note: for the courier
    """
    assert isinstance(order, Order) and isinstance(order.ship_to, Address)
    return f"{order.quantity} x {order.item} to {order.ship_to.city} ({order.speed})"


def test_model_parameters_make_a_nested_schema_and_arrive_as_instances():
    tool = build_tool(place_order, "shop/v1/place_order")
    arguments = {"order": {"item": "伞", "quantity": 2, "ship_to": {"city": "成都"}}}
    jsonschema.validate(arguments, tool.parameters)  # the $defs/$refs resolve
    assert tool.invoke(arguments, RunContext(run_id="t")) == "2 x 伞 to 成都 (standard)"
    bad = ToolCall(
        id="c", name="place_order", arguments={"order": {"item": "伞", "quantity": 0, "ship_to": {}}}
    )
    problem = check_call(bad, {"place_order": tool})
    assert problem is not None and "city" in problem.error_message and "quantity" in problem.error_message
