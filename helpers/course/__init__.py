"""The course around the kernels: exercises (checkers and solutions, per stage), the kernels learners
write themselves (write_it), stage 01's CPU world, the teacher kit, notebook tools and Colab. Imports
every layer below."""
