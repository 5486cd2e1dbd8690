"""The Runs & inspector page; its code is flowcall/studio/pages/runs.py."""

from flowcall.studio.pages import show

show("runs")
