"""The Experiments page; its code is flowcall/studio/pages/experiments.py."""

from flowcall.studio.pages import show

show("experiments")
