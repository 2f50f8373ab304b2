"""The mentor's tools: grade a class (`checker grade`), the Gradescope autograder bundle, GitHub Classroom.

May import: checker.learner (a mentor reviews with the same diffs and pristine-stub test a learner has),
checker.run and everything below it. Not checker.author.
"""
