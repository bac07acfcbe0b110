"""Notebook upkeep for the course's maintainers: the house form of the committed notebooks, no answer on
the screen above its question, glossary links. Imports the course and every layer below; the course never
imports it."""
