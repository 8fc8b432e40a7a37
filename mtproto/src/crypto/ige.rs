//! AES-256 in IGE mode: c_i = E(p_i ⊕ c_{i-1}) ⊕ p_{i-1}, with the 32-byte iv as (c_0, p_0).

use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use aes::Aes256;

fn xor16(a: &mut [u8; 16], b: &[u8]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// Encrypts `data` in place; its length must be a multiple of 16 (the caller pads). A trailing
/// partial block is left as is.
pub fn ige_encrypt(data: &mut [u8], key: &[u8; 32], iv: &[u8; 32]) {
    let cipher = Aes256::new(key.into());
    let mut prev_c: [u8; 16] = iv[..16].try_into().unwrap_or([0; 16]);
    let mut prev_p: [u8; 16] = iv[16..].try_into().unwrap_or([0; 16]);
    for chunk in data.chunks_exact_mut(16) {
        let mut block = [0u8; 16];
        block.copy_from_slice(chunk);
        let plain = block;
        xor16(&mut block, &prev_c);
        let mut b = block.into();
        cipher.encrypt_block(&mut b);
        let mut out: [u8; 16] = b.into();
        xor16(&mut out, &prev_p);
        chunk.copy_from_slice(&out);
        prev_c = out;
        prev_p = plain;
    }
}

pub fn ige_decrypt(data: &mut [u8], key: &[u8; 32], iv: &[u8; 32]) {
    let cipher = Aes256::new(key.into());
    let mut prev_c: [u8; 16] = iv[..16].try_into().unwrap_or([0; 16]);
    let mut prev_p: [u8; 16] = iv[16..].try_into().unwrap_or([0; 16]);
    for chunk in data.chunks_exact_mut(16) {
        let mut block = [0u8; 16];
        block.copy_from_slice(chunk);
        let cipher_block = block;
        xor16(&mut block, &prev_p);
        let mut b = block.into();
        cipher.decrypt_block(&mut b);
        let mut out: [u8; 16] = b.into();
        xor16(&mut out, &prev_c);
        chunk.copy_from_slice(&out);
        prev_c = cipher_block;
        prev_p = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ige_round_trips_and_chains() {
        let key = [7u8; 32];
        let iv: [u8; 32] = core::array::from_fn(|i| i as u8);
        let plain: Vec<u8> = (0..64).map(|i| i as u8).collect();
        let mut data = plain.clone();
        ige_encrypt(&mut data, &key, &iv);
        assert_ne!(data, plain);
        // Changing the first block changes every later block (chaining).
        let mut other = plain.clone();
        other[0] ^= 1;
        ige_encrypt(&mut other, &key, &iv);
        assert_ne!(data[48..], other[48..]);
        ige_decrypt(&mut data, &key, &iv);
        assert_eq!(data, plain);
    }
}
