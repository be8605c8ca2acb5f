//! xorshift64*: a seeded, reproducible generator for the property tests (the
//! checker's random edits, `tests/fuzz.rs`'s mutated fixtures), so that a
//! failure names the seed that reproduces it. Test code only: the library
//! includes it under `#[cfg(test)]`, `tests/fuzz.rs` by path.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}
