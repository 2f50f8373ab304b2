"""An attempt whose top-level code never ends: the time limit must stop it and say it was importing."""
while True:
    pass
