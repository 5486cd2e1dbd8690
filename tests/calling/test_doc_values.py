"""Values copied from a tool's docs are flagged, values the user said are not (issue 14, point 3)."""

from __future__ import annotations

from flowcall.calling.doc_values import (
    UNMADE_NOTE,
    doc_values,
    required_doc_values,
    retry_message,
    with_unmade_note,
)
from flowcall.calling.grounding import ground_calls
from flowcall.calling.relevance import last_user_text
from flowcall.core.messages import Message, ToolCall, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a place.",
    parameters={
        "type": "object",
        "required": ["location"],
        "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    },
)
JIRA = ToolSpec(
    name="create_issue",
    description="Create a Jira issue. Example project key: PAY.",
    parameters={
        "type": "object",
        "required": ["fields"],
        "properties": {
            "fields": {
                "type": "object",
                "properties": {
                    "project": {"type": "object", "properties": {"key": {"type": "string"}}},
                    "summary": {"type": "string"},
                    "priority": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "enum": ["Highest", "High", "Medium", "Low", "Lowest"]}
                        },
                    },
                },
            }
        },
    },
)
REPO = ToolSpec(
    name="list_issues",
    description="List issues of a repository.",
    parameters={
        "type": "object",
        "required": ["repo"],
        "properties": {
            "repo": {"type": "string", "description": "owner/name", "examples": ["octocat/Hello-World"]},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
        },
    },
)


def call(name: str, **arguments) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def asked(text: str) -> list[Message]:
    return [
        Message(role="system", content="You are a helpful assistant."),
        Message(role="user", content=text),
    ]


def test_the_description_example_is_flagged_when_the_user_named_another_city():
    [found] = doc_values(
        [call("get_weather", location="San Francisco, CA")],
        [WEATHER],
        asked("what's the weather like in chicago right now"),
    )
    assert (found.tool, found.argument, found.value) == ("get_weather", "location", "San Francisco, CA")
    assert "example" in found.why


def test_the_same_value_is_fine_when_the_user_said_it():
    assert (
        doc_values(
            [call("get_weather", location="San Francisco, CA")], [WEATHER], asked("weather in san francisco?")
        )
        == []
    )
    assert (
        doc_values([call("get_weather", location="Chicago, IL")], [WEATHER], asked("weather in chicago?"))
        == []
    )


def test_examples_in_an_examples_list_count_as_docs():
    [found] = doc_values(
        [call("list_issues", repo="octocat/Hello-World")],
        [REPO],
        asked("open issues in torvalds/linux please"),
    )
    assert found.argument == "repo"


def test_only_docs_examples_in_required_arguments_count_as_unsaid():
    """An example in a required argument (deep in it too) is unsaid; an enum value the words
    speak against, or an example in an optional argument, is not (the call can do without it)."""
    found = doc_values([call("list_issues", repo="octocat/Hello-World")], [REPO], asked("thanks, that's all"))
    assert [f.argument for f in required_doc_values(found, [REPO])] == ["repo"]
    against = doc_values(
        [call("create_issue", fields={"project": {"key": "PAY"}, "priority": {"name": "Medium"}})],
        [JIRA],
        asked("lowest priority bug in project PAY: login button is grey"),
    )
    assert [f.argument for f in against] == ["fields.priority.name"] and required_doc_values(
        against, [JIRA]
    ) == []
    # deep in a required object, the value counts only when required at every level of its path
    deep = doc_values(
        [call("create_issue", fields={"project": {"key": "PAYROLL"}})],
        [JIRA.model_copy(update={"description": "Example project key: PAYROLL."})],
        asked("file a bug: login button is grey"),
    )
    assert [f.argument for f in deep] == ["fields.project.key"] and required_doc_values(deep, [JIRA]) == []
    fields = JIRA.parameters["properties"]["fields"]
    strict = JIRA.model_copy(
        update={
            "parameters": {
                **JIRA.parameters,
                "properties": {
                    "fields": {
                        **fields,
                        "required": ["project"],
                        "properties": {
                            **fields["properties"],
                            "project": {**fields["properties"]["project"], "required": ["key"]},
                        },
                    }
                },
            }
        }
    )
    assert [f.argument for f in required_doc_values(deep, [strict])] == ["fields.project.key"]
    listed = ToolSpec(
        name="edit",
        description="e.g. /srv/app/main.py",
        parameters={
            "type": "object",
            "required": ["edits"],
            "properties": {
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {"path": {"type": "string"}},
                    },
                }
            },
        },
    )
    found = doc_values(
        [call("edit", edits=[{"path": "/srv/app/main.py"}])], [listed], asked("fix the typo in my readme")
    )
    assert [f.argument for f in required_doc_values(found, [listed])] == ["edits[0].path"]
    optional = ToolSpec(
        name="w",
        description="",
        parameters={
            "type": "object",
            "properties": {"location": {"type": "string", "description": "e.g. San Francisco, CA"}},
        },
    )
    found = doc_values([call("w", location="San Francisco, CA")], [optional], asked("weather in chicago"))
    assert found and required_doc_values(found, [optional]) == []


def test_the_parameters_declared_default_is_not_a_copied_example():
    """A real Kubernetes MCP server requires `namespace` and declares its default "default", which its
    description repeats; "list every pod with label app=redis" gets namespace "default", which is
    what the tool does unasked, not an example copied over a value the user gave."""
    pods = ToolSpec(
        name="kubectl_get",
        description="List Kubernetes resources.",
        parameters={
            "type": "object",
            "required": ["resourceType", "namespace"],
            "properties": {
                "resourceType": {"type": "string"},
                "namespace": {
                    "type": "string",
                    "default": "default",
                    "description": "Namespace (defaults to 'default')",
                },
            },
        },
    )
    assert (
        doc_values(
            [call("kubectl_get", resourceType="pods", namespace="default")],
            [pods],
            asked("list every pod with label app=redis"),
        )
        == []
    )
    # an enum's default the user spoke against is still flagged
    [found] = doc_values(
        [call("list_issues", repo="acme/api", state="open")],
        [REPO],
        asked("closed issues of acme/api please"),
    )
    assert found.value == "open" and "closed" in found.why


def test_a_value_from_an_earlier_tool_result_is_grounded():
    messages = [
        *asked("list my repo's issues"),
        Message(role="tool", tool_call_id="x", name="whoami", content='{"repo": "octocat/Hello-World"}'),
    ]
    assert doc_values([call("list_issues", repo="octocat/Hello-World")], [REPO], messages) == []


def test_an_enum_value_against_the_users_words_is_flagged_deep_in_an_object():
    calls = [
        call(
            "create_issue",
            fields={"project": {"key": "OPS"}, "summary": "printer jam", "priority": {"name": "Medium"}},
        )
    ]
    [found] = doc_values(calls, [JIRA], asked("file a lowest priority ticket in OPS: printer jam"))
    assert found.argument == "fields.priority.name" and "'Lowest'" in found.why


def test_an_enum_value_nobody_spoke_about_is_left_alone():
    assert (
        doc_values(
            [call("get_weather", location="Chicago", unit="fahrenheit")],
            [WEATHER],
            asked("weather in chicago"),
        )
        == []
    )
    assert (
        doc_values(
            [call("list_issues", repo="torvalds/linux", state="open")],
            [REPO],
            asked("issues in torvalds/linux"),
        )
        == []
    )


def test_short_values_numbers_and_unknown_tools_are_never_flagged():
    tool = ToolSpec(
        name="t",
        description="Country code, e.g. US. Limit, e.g. 100.",
        parameters={
            "type": "object",
            "properties": {"country": {"type": "string"}, "limit": {"type": "integer"}},
        },
    )
    assert doc_values([call("t", country="US", limit=100)], [tool], asked("top songs")) == []
    assert doc_values([call("other", x="San Francisco, CA")], [WEATHER], asked("chicago")) == []


def test_the_note_to_the_model_does_not_make_the_values_look_said():
    """The retry message quotes the values; grounding and the relevance gate must not read it
    as the user's words, or the copied values would pass the second time."""
    found = doc_values(
        [call("get_weather", location="San Francisco, CA", unit="celsius")],
        [WEATHER],
        asked("weather in chicago"),
    )
    messages = [*asked("weather in chicago"), retry_message(found)]
    assert "San Francisco, CA" in messages[-1].content
    assert doc_values([call("get_weather", location="San Francisco, CA")], [WEATHER], messages) == found
    assert last_user_text(messages) == "weather in chicago"
    optional = ToolSpec(name="w", parameters={"type": "object", "properties": {"city": {"type": "string"}}})
    [grounded] = ground_calls([call("w", city="San Francisco, CA")], [optional], messages)
    assert grounded.arguments == {}


def test_a_plural_of_a_short_word_the_user_said_is_the_users():
    kubectl = ToolSpec(
        name="kubectl_get",
        description="Get resources.",
        parameters={
            "type": "object",
            "required": ["resourceType"],
            "properties": {
                "resourceType": {"type": "string", "description": "Type of resource, e.g. pods, deployments"}
            },
        },
    )
    assert (
        doc_values(
            [call("kubectl_get", resourceType="pods")],
            [kubectl],
            asked("list every pod with label app=redis across all namespaces"),
        )
        == []
    )
    [found] = doc_values([call("kubectl_get", resourceType="pods")], [kubectl], asked("show me every node"))
    assert found.value == "pods"


def test_the_note_for_an_answer_in_place_of_a_call_joins_the_flows_system_prompt():
    messages = [Message(role="system", content="You book tables."), Message(role="user", content="订个位")]
    noted = with_unmade_note(messages)
    assert [m.role for m in noted] == ["system", "user"] and noted[1] == messages[1]
    assert noted[0].content == "You book tables.\n\n" + UNMADE_NOTE
    assert messages[0].content == "You book tables."  # the run's own conversation is untouched
