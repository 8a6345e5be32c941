"""Shared utilities of every stage: stable ids, text helpers, prompt files, images, JSON paths, YAML error lines, and the statistics behind every interval the project reports (``stats``: bootstrap and Wilson CIs).
"""
