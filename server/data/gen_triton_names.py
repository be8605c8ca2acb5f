"""Writes the public names of an installed `triton.language` to triton_language_names.txt.

KL005 (unknown-triton-function) checks `tl.X` (and `tl.math.X`, as `math.X`) against this list, so it must
come from a real Triton, not from memory. Run it with the Python that has
the Triton you target:

    python server/data/gen_triton_names.py > server/data/triton_language_names.txt
"""
import triton
import triton.language as tl


def public_names(module):
    return sorted(name for name in dir(module) if not name.startswith("_"))


def main():
    print(f"# triton.language public names, generated from triton {triton.__version__}")
    print("# by server/data/gen_triton_names.py; one name per line")
    for name in public_names(tl):
        print(name)
    # `tl.math.X` is checked as `math.X`.
    for name in public_names(tl.math):
        print(f"math.{name}")


if __name__ == "__main__":
    main()
