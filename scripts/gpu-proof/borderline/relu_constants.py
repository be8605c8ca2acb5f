# The constant relu_sibling.py imports.
OFFSET = 0.0
