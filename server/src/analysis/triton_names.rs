//! The public names of `triton.language`, generated from an installed Triton
//! by `server/data/gen_triton_names.py` and checked in as data.

use std::collections::HashSet;
use std::sync::OnceLock;

const DATA: &str = include_str!("../../data/triton_language_names.txt");

fn names() -> &'static HashSet<&'static str> {
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| DATA.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect())
}

/// Whether `triton.language` has a public attribute `name`.
pub fn is_known(name: &str) -> bool {
    names().contains(name)
}

/// The Triton version the list was generated from.
pub fn generated_from() -> &'static str {
    DATA.lines().next().and_then(|l| l.rsplit("triton ").next()).unwrap_or("unknown")
}

pub fn all() -> impl Iterator<Item = &'static str> {
    let mut v: Vec<&'static str> = names().iter().copied().collect();
    v.sort_unstable();
    v.into_iter()
}
