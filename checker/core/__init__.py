"""What every part of the checker shares: the kata manifest, the mutation reports, the CPU clock, loading kata
files, and what every process the checker starts has in common.

May import: nothing else of the checker (it is the floor every other part stands on).
"""
