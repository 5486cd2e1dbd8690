"""The API page; its code is flowcall/studio/pages/api.py."""

from flowcall.studio.pages import show

show("api")
