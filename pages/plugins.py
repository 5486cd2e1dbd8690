"""The Plugins page; its code is flowcall/studio/pages/plugins.py."""

from flowcall.studio.pages import show

show("plugins")
