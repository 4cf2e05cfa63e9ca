//! The seeded generator behind every permutation p-value.
//!
//! A drift alert must be reproducible from the seed stored in its evidence, by any later build.
//! `rand`'s `StdRng` explicitly does not promise the same stream across versions, so the module
//! carries its own: xoshiro256** (Blackman & Vigna, 2018) seeded through SplitMix64, both fixed,
//! published algorithms whose output for a given seed never changes.

/// xoshiro256** state. Not cryptographic; only statistical quality and reproducibility matter.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

/// One SplitMix64 step: spreads a 64-bit seed over the 256-bit state, as the xoshiro authors
/// recommend, so seeds 0, 1, 2 … give unrelated streams.
#[must_use]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for a sub-stream (one test of a pin) derived from the pin's seed and a tag, so adding a
/// test never changes the numbers another test draws.
#[must_use]
pub fn derive_seed(seed: u64, tag: u64) -> u64 {
    let mut state = seed ^ tag.wrapping_mul(0xD1B5_4A32_D192_ED03);
    splitmix64(&mut state)
}

/// FNV-1a, 64 bits, of `bytes`: a name turned into a seed or a key, the same in every build
/// (std's `DefaultHasher` does not promise that across releases).
#[must_use]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01B3)
    })
}

impl Rng {
    #[must_use]
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        Rng {
            s: [
                splitmix64(&mut state),
                splitmix64(&mut state),
                splitmix64(&mut state),
                splitmix64(&mut state),
            ],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` without modulo bias (Lemire's multiply-and-reject). `n` must be > 0.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as usize;
            }
        }
    }

    /// Moves a uniformly random `k`-subset of `items` to its front (partial Fisher–Yates), in
    /// O(k): permutation tests only need to know which items carry the smaller label.
    pub fn choose_front<T>(&mut self, items: &mut [T], k: usize) {
        let n = items.len();
        for i in 0..k.min(n) {
            let j = i + self.below(n - i);
            items.swap(i, j);
        }
    }

    /// A standard normal draw (Box–Muller; the second variate is dropped for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::{Rng, splitmix64};

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // Reference outputs of Vigna's splitmix64.c for seed 1234567, as quoted in the test
        // vectors of several ports (e.g. Java's SplittableRandom-compatible implementations).
        let mut state = 1_234_567u64;
        let expected = [
            6_457_827_717_110_365_317,
            3_203_168_211_198_807_973,
            9_817_491_932_198_370_423,
            4_593_380_528_125_082_431,
            16_408_922_859_458_223_821,
        ];
        for want in expected {
            assert_eq!(splitmix64(&mut state), want);
        }
    }

    #[test]
    fn xoshiro256starstar_matches_the_reference_stream() {
        // rand_xoshiro's test vector for state [1, 2, 3, 4], itself taken from Vigna's C code.
        let mut rng = Rng { s: [1, 2, 3, 4] };
        let expected = [
            11_520,
            0,
            1_509_978_240,
            1_215_971_899_390_074_240,
            1_216_172_134_540_287_360,
            607_988_272_756_665_600,
        ];
        for want in expected {
            assert_eq!(rng.next_u64(), want);
        }
    }

    #[test]
    fn same_seed_same_stream_and_below_stays_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            counts[a.below(3)] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn choose_front_keeps_the_multiset() {
        let mut rng = Rng::new(3);
        let mut items: Vec<u32> = (0..10).collect();
        rng.choose_front(&mut items, 4);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }
}
