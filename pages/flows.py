"""The Flows page; its code is flowcall/studio/pages/flows.py."""

from flowcall.studio.pages import show

show("flows")
