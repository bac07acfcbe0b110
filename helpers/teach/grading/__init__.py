"""Grading students' notebooks: each answer judged in the grader's own process, from what the student wrote.

A student's notebook runs in the sandbox (helpers/teach/sandbox.py), in a fresh Jupyter kernel; the
grader trusts nothing that run reports as a verdict. What it takes from the notebook:

- a **checker call**, `check_05_exercise_1((4, 8))`: its arguments as written in the cell. Arguments
  that are constants (numbers, strings, tuples, sets, arithmetic on numbers) are read by the grader
  itself; arguments the notebook computes (`check_05_exercise_1(my_answer)`) take the value the
  student's code gave them in the sandboxed run, sent back as its repr and read as a Python literal,
  never executed. The grader then calls the course's checker, as it imported it before any student
  code ran, on those values. From the run it takes only whether the call was reached (an answer whose
  cell raised first is an error, as in the student's own run) and what the sandbox stopped.
- a **kernel cell** (write it yourself, `%%kernel 03`): the kernel source as the cell holds it, judged
  by the exercise's check in a fresh sandbox, in a process of its own that the student's kernel cannot
  read; its verdict counts only when it carries a secret that process alone was given.

Printed verdicts, files the notebook writes, checkers it replaces, solutions it imports: none of them
reach the grade. The course's solution registry (helpers/course/exercises/solutions/) is not in the
sandbox at all (sandbox.HIDDEN): no route, an import in a fresh process, a reload, a read of the file,
reaches it; and a notebook naming it has no computed answer.

The modules, in the order a grade is made:

    run.py           the notebook's run in the sandbox, each checker call routed through a recorder
    answers.py       an answer's value read from the source (constants), and code that names the solutions
    checkers.py      exercises answered by a checker call, judged here by the grader's own checkers
    kernel_cells.py  exercises answered by a `%%kernel` cell, judged in a sandbox of their own
    results.py       a notebook's grade (a status and a message per exercise), as text and CSV
    notebook.py      grading one notebook: KINDS, the kinds of exercise judged, and grade()
"""
