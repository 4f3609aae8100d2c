//! NIST SP 800-38G FF1 over AES-256, specialised for radix 2 on strings of 20 to 128 bits held
//! in a `u128` (the most significant numeral first): no heap, no big integers, and one AES block
//! per round.
//!
//! FF1's round function is a CBC-MAC over `P || Q`. `P` depends only on the length, and `Q` is
//! the tweak, zero padding, the round number and `B`: for strings of up to 128 bits the round
//! number and `B` fall in `Q`'s last block, so every block before it is the same for every input
//! of one length and tweak. Those are encrypted once, at set-up; a round then encrypts one block
//! (and needs one, as `d`, the bytes of `R` used, is at most 12 here).

use aes::cipher::consts::U16;
use aes::cipher::{
    BlockCipherEncBackend, BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, KeyInit,
};
use aes::{Aes256, Block};

/// FF1 on `n`-bit binary strings under one key and one tweak.
#[derive(Clone)]
pub struct BinaryFf1 {
    aes: Aes256,
    /// Bits of the right half (`v` in the standard), and masks of the left half's `u` low bits
    /// and the right half's `v`.
    v: u32,
    masks: [u128; 2],
    /// Where the round number sits in `Q`'s last block (above `b` bytes of `NUM(B)`), and how
    /// far the block is shifted down to keep its first `d` bytes (`R` read as a number).
    round_shift: u32,
    num_shift: u32,
    /// The CBC-MAC's state after every block of `P || Q` but the last, XORed with `Q`'s last
    /// block with the round number and `B` left zero: a round XORs those two in and encrypts.
    /// Held as a big-endian number, so a round's block is three XORs of integers.
    fixed: u128,
}

impl BinaryFf1 {
    /// FF1 on `n`-bit strings (20 ≤ n ≤ 128: FF1 needs 2^n ≥ 10^6) under `key` and `tweak`.
    ///
    /// # Panics
    /// For an `n` outside 20..=128: the callers' lengths are constants.
    pub fn new(key: &[u8; 32], n: u32, tweak: &[u8]) -> BinaryFf1 {
        assert!((20..=128).contains(&n), "FF1 on {n} bits: 20 to 128 here");
        let aes = Aes256::new(key.into());
        let u = n / 2;
        let v = n - u;
        let b = v.div_ceil(8) as usize;
        let d = 4 * b.div_ceil(4) + 4;
        // P = [1, 2, 1] || radix (3 bytes) || 10 || u mod 256 || n (4 bytes) || t (4 bytes).
        let mut p = [0u8; 16];
        p[..3].copy_from_slice(&[1, 2, 1]);
        p[3..6].copy_from_slice(&2u32.to_be_bytes()[1..]);
        p[6] = 10;
        p[7] = (u % 256) as u8;
        p[8..12].copy_from_slice(&n.to_be_bytes());
        p[12..].copy_from_slice(&(tweak.len() as u32).to_be_bytes());
        // Q = tweak || zeros || round || NUM(B), a whole number of blocks.
        let q_len = (tweak.len() + 1 + b).div_ceil(16) * 16;
        let mut q = vec![0u8; q_len];
        q[..tweak.len()].copy_from_slice(tweak);
        let mut chained = Block::from(p);
        aes.encrypt_block(&mut chained);
        for block in q[..q_len - 16].chunks(16) {
            xor(&mut chained, block);
            aes.encrypt_block(&mut chained);
        }
        xor(&mut chained, &q[q_len - 16..]);
        BinaryFf1 {
            aes,
            v,
            masks: [mask(u), mask(v)],
            round_shift: 8 * b as u32,
            num_shift: 8 * (16 - d as u32),
            fixed: u128::from_be_bytes(chained.into()),
        }
    }

    /// The encryption of `x`'s low `n` bits (higher bits must be 0).
    pub fn encrypt(&self, x: u128) -> u128 {
        self.feistel(x, true)
    }

    /// The `x` whose encryption is `y`.
    pub fn decrypt(&self, y: u128) -> u128 {
        self.feistel(y, false)
    }

    /// Runs the ten rounds inside one call to the cipher's backend. The aes crate chooses its
    /// backend on every call (and with VAES copies the round keys into wide registers first),
    /// which cost more than the block itself when paid per round: 70 ns a block against 16 ns
    /// with the choice made once, on this project's AMD EPYC machine.
    fn feistel(&self, value: u128, forward: bool) -> u128 {
        let mut out = 0;
        self.aes.encrypt_with_backend(Feistel {
            ff1: self,
            value,
            forward,
            out: &mut out,
        });
        out
    }

    /// `NUM(S)` of round `round` with `half` as `B`: the first `d` bytes of the CBC-MAC's
    /// last block, as a number (only its low `m` bits are used, so it is left whole).
    #[inline(always)]
    fn round<C: BlockCipherEncBackend<BlockSize = U16>>(
        &self,
        cipher: &C,
        round: u8,
        half: u128,
    ) -> u128 {
        // The last block ends with the round number, then `B` in `b` bytes.
        let last = (u128::from(round) << self.round_shift) | half;
        let mut block = Block::from((self.fixed ^ last).to_be_bytes());
        cipher.encrypt_block_inplace(&mut block);
        u128::from_be_bytes(block.into()) >> self.num_shift
    }
}

/// FF1's ten rounds one way or the other, as the closure the cipher's backend runs.
struct Feistel<'a> {
    ff1: &'a BinaryFf1,
    value: u128,
    forward: bool,
    out: &'a mut u128,
}

impl BlockSizeUser for Feistel<'_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for Feistel<'_> {
    #[inline(always)]
    fn call<C: BlockCipherEncBackend<BlockSize = U16>>(self, cipher: &C) {
        let ff1 = self.ff1;
        let (mut a, mut b) = (self.value >> ff1.v, self.value & mask(ff1.v));
        // Even rounds make a `u`-bit half, odd rounds a `v`-bit one.
        let width = |round: u8| ff1.masks[usize::from(round & 1)];
        if self.forward {
            for round in 0..10u8 {
                let c = a.wrapping_add(ff1.round(cipher, round, b)) & width(round);
                (a, b) = (b, c);
            }
        } else {
            for round in (0..10u8).rev() {
                let c = b.wrapping_sub(ff1.round(cipher, round, a)) & width(round);
                (a, b) = (c, a);
            }
        }
        *self.out = (a << ff1.v) | b;
    }
}

fn xor(block: &mut Block, with: &[u8]) {
    for (a, b) in block.iter_mut().zip(with) {
        *a ^= b;
    }
}

/// The low `bits` bits set.
fn mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1 << bits) - 1
    }
}

#[cfg(test)]
#[path = "ff1_binary_tests.rs"]
mod tests;
