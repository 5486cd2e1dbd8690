"""Tool docs reach the model as plain text (calling/doc_text.py)."""

from __future__ import annotations

from flowcall.calling import relevance, shortlist
from flowcall.calling.doc_text import plain, plain_schema
from flowcall.calling.prompt import render_tools
from flowcall.core.messages import ToolSpec

STRIPE_REFUND = ToolSpec(
    name="PostRefunds",
    description=(
        "<p>When you create a new refund, you must specify a Charge or a PaymentIntent object on which to "
        "create it.</p> <p>Creating a new refund will refund a charge that has previously been created but "
        'not yet refunded. See <a href="/docs/refunds">refunds</a> &amp; disputes.</p>'
    ),
    parameters={
        "type": "object",
        "properties": {
            "reason": {
                "type": "string",
                "enum": ["duplicate", "fraudulent", "requested_by_customer"],
                "description": "<p>String indicating the reason for the refund.</p>",
            },
            "charge": {"type": "string", "description": "<p>The identifier of the charge to refund.</p>"},
        },
    },
)


def test_html_docs_are_read_as_their_text():
    assert plain(STRIPE_REFUND.description) == (
        "When you create a new refund, you must specify a Charge or a PaymentIntent object on which to "
        "create it. Creating a new refund will refund a charge that has previously been created but not yet "
        "refunded. See refunds & disputes."
    )
    assert plain("line one<br>line two") == "line one line two"


def test_a_plain_doc_with_angle_brackets_is_left_as_written():
    for text in (
        "Returns a List<String> of names.",
        "Page size, 1 <= n <= 100 (e.g. 20).",
        "Use <owner>/<repo>.",
    ):
        assert plain(text) == text


def test_the_decision_and_the_shortlist_see_no_tags_the_gate_reads_the_docs_as_calibrated():
    listed = render_tools([STRIPE_REFUND])
    summary = shortlist.summary(STRIPE_REFUND)
    for shown in (listed, summary):
        assert "<p>" not in shown and "</a>" not in shown and "&amp;" not in shown
    assert "String indicating the reason for the refund." in listed
    assert summary.startswith("When you create a new refund")
    # the gate's bar was fitted on descriptions as written; read as text they separated no better
    question = relevance.relevance_request(STRIPE_REFUND, "refund ch_1 in full").messages[1].content
    assert "Description: <p>When you create a new refund" in question


def test_plain_schema_keeps_everything_but_the_markup():
    cleaned = plain_schema(STRIPE_REFUND.parameters)
    assert cleaned["properties"]["reason"]["enum"] == ["duplicate", "fraudulent", "requested_by_customer"]
    assert cleaned["properties"]["charge"]["description"] == "The identifier of the charge to refund."
    # a property that is *called* "description" is a parameter, not a doc: its schema is kept whole
    schema = {
        "type": "object",
        "properties": {"description": {"type": "string", "description": "<p>Notes.</p>"}},
    }
    assert plain_schema(schema)["properties"]["description"] == {"type": "string", "description": "Notes."}
