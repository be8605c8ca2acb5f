//! Runs the Python harness — see issue 4.
