"""Notebook upkeep for the course's maintainers. Imports the course and every layer below; the course never
imports it, and neither does the teacher kit beside it (helpers.teach).

    notebooks.py          the committed notebooks in house form: check, refresh (execute), strip
                          (`python -m helpers notebooks`, helpers/cli/notebooks.py)
    answers_on_screen.py  no exercise's answer on the screen above its question (the root conftest.py runs it
                          beside nbval; tests/maintain/test_answers_off_screen.py on the committed notebooks)
    glossary_links.py     the first use of each glossary term links to it (tools/glossary_links.py writes them)
    results_on_screen.py  a table of committed results names its file and shows the prose's numbers, each row once
    references.py         every `module.name` the prose names exists
    figures_readable.py   every figure is readable at the width a notebook shows it
    prose_and_output.py   what the prose says a cell shows or offers (explorer values, blocks traced, defaults) it does
    cell_runner.py        runs the few cells those checks need, in this process, without Jupyter
"""
