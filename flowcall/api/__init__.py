"""FlowCall over HTTP (`flowcall serve`): a REST API for flows and runs, with Server-Sent
Events, and an OpenAI-compatible chat-completions endpoint where `model` names a flow.

FastAPI on uvicorn: the routes are typed with the same pydantic models the rest of FlowCall
uses, and it writes the OpenAPI document (/docs) from them. Like the CLI it sits on top: it
goes through the service (flowcall/service/front.py) and never below it.
"""
