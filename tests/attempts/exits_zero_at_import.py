import sys

print("PASS")
sys.exit(0)
