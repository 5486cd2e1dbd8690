"""The Models page; its code is flowcall/studio/pages/models.py."""

from flowcall.studio.pages import show

show("models")
