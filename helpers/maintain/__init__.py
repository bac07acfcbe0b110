"""Notebook upkeep for the course's maintainers. Imports the course and every layer below; the course never
imports it, and neither does the teacher kit beside it (helpers.teach).

    notebooks.py          the committed notebooks in house form: check, refresh (execute), strip
                          (`python -m helpers notebooks`, helpers/cli/notebooks.py)
    answers_on_screen.py  no exercise's answer on the screen above its question (the root conftest.py runs it
                          beside nbval; tests/maintain/test_answers_off_screen.py on the committed notebooks)
    glossary_links.py     the first use of each glossary term links to it (tools/glossary_links.py writes them)
"""
