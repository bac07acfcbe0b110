"""Autograders for the systems where teachers grade (issue 33): Gradescope and PrairieLearn.

Both run one container per submission, without a GPU and without user namespaces, so the notebooks run in
container mode (helpers/teach/container.py) on the CPU emulator; both read a results file that the grade's JSON
(helpers/teach/grading/results.py) and the points table (helpers/teach/points.py) make.

    bundle.py        the course as an autograder carries it (no solutions, no history), its settings, and the
                     grading of a submission folder: every expected notebook, a missing one scored 0
    gradescope.py    autograder.zip (setup.sh, run_autograder) and Gradescope's results.json
    prairielearn.py  question folders (info.json, a grader entrypoint) and PrairieLearn's results.json

`AUTOGRADER_ROOT` (Gradescope, default /autograder) and `GRADE_ROOT` (PrairieLearn, default /grade) move the
root, so a teacher runs an exported autograder on their own machine before uploading it, and the tests run it.
"""
