"""Flet controls only: cards, summaries, timeline, settings, theme, strings.

Imports app.device and app.protocol; never the gateway.
"""
