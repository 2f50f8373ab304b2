"""The kata author's tools: mutation testing of a kata's hidden checks (`make mutate N=k`) and its oracle.

May import: checker.run, checker.trusted and everything below them. Not the learner's or mentor's tools.
"""
