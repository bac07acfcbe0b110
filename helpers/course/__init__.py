"""The learner's course around the kernels: exercises (checkers and solutions, per stage), the kernels
learners write themselves (write_it), stage 01's CPU world and Colab. Imports every layer below; imports
neither the teacher kit (helpers.teach) nor the notebook upkeep (helpers.maintain), which sit above it."""
