"""The teacher kit, beside the course: notebooks to hand out or keep, and a grader that runs each student's code
in a sandbox and judges every answer itself. Imports the course and every layer below; the course never imports
it, and neither does the notebook upkeep beside it (helpers.maintain). `python -m helpers teacher` is its
command line (helpers/cli/teacher.py).

    copies.py    student copies (answers back on their placeholders) and teacher copies (every answer filled in)
    grading/     grading a student's notebook: its run in the sandbox, each kind of exercise judged, the grade
                 (grading/__init__.py says what the grader trusts and what it does not)
    sandbox.py   bubblewrap around every student's code, with limits on time, memory, processes and files

What consumes a grade (a report, or an export to the system a class grades in) reads grading/results.py's
Grade, one result per exercise.
"""
