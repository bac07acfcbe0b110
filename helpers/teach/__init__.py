"""The teacher kit, beside the course: student and teacher copies of the notebooks, the grader and its
sandbox. Imports the course and every layer below; the course never imports it."""
