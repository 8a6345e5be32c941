"""Shared utilities of every stage: stable ids (``ids``), text helpers and the stop-word list (``text``), sentences and
answer terms of a chunk (``sentences``), the antonym list (``lexicon``), prompt files (``prompts``), images, JSON paths,
YAML error lines, and the statistics behind every interval the project reports (``stats``: bootstrap and Wilson CIs).
Imports nothing else of the project.
"""
