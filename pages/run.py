"""The Run page; its code is flowcall/studio/pages/run.py."""

from flowcall.studio.pages import show

show("run")
