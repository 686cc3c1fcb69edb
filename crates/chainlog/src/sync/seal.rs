//! What travels: every object compressed with zstd and, with the user's key, encrypted with
//! XChaCha20-Poly1305 (a random nonce per object); every name a keyed hash, so the bucket's
//! operator sees opaque ids and sizes only.
//!
//! An object is `CLS0` + zstd bytes (no key) or `CLS1` + 24-byte nonce + ciphertext of the
//! zstd bytes (the key's AEAD tag authenticates it). Names and the segment chain use BLAKE3,
//! keyed with a key derived from the user's key when there is one.

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::error::RemoteFault;

const PLAIN: &[u8; 4] = b"CLS0";
const SEALED: &[u8; 4] = b"CLS1";

/// zstd level: fast enough that compressing costs less than sending the bytes it saves.
const LEVEL: i32 = -1;

/// The keys of one remote (none: plaintext).
pub struct Seal {
    cipher: Option<XChaCha20Poly1305>,
    names: Option<[u8; 32]>,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seal")
            .field("encrypted", &self.encrypted())
            .finish()
    }
}

impl Seal {
    /// Keys derived from the contents of the user's key file, or none.
    pub fn new(key_file: Option<&[u8]>) -> Seal {
        match key_file {
            None => Seal {
                cipher: None,
                names: None,
            },
            Some(secret) => {
                let enc = blake3::derive_key("chainlog sync 2026-12 object encryption", secret);
                Seal {
                    cipher: Some(XChaCha20Poly1305::new(&enc.into())),
                    names: Some(blake3::derive_key(
                        "chainlog sync 2026-12 object names",
                        secret,
                    )),
                }
            }
        }
    }

    /// Whether objects are encrypted.
    pub fn encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// The hash of `parts` joined, as 64 hex digits (keyed when there is a key).
    pub fn hash(&self, parts: &[&[u8]]) -> String {
        let mut h = match &self.names {
            Some(k) => blake3::Hasher::new_keyed(k),
            None => blake3::Hasher::new(),
        };
        for p in parts {
            h.update(&(p.len() as u64).to_le_bytes());
            h.update(p);
        }
        h.finalize().to_hex().to_string()
    }

    /// The object holding `plain`.
    pub fn seal(&self, plain: &[u8]) -> Vec<u8> {
        let packed = zstd::bulk::compress(plain, LEVEL).expect("zstd compresses any input");
        match &self.cipher {
            None => [&PLAIN[..], &packed].concat(),
            Some(c) => {
                let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
                let sealed = c
                    .encrypt(&nonce, packed.as_slice())
                    .expect("XChaCha20-Poly1305 encrypts any length chainlog writes");
                [&SEALED[..], nonce.as_slice(), &sealed].concat()
            }
        }
    }

    /// The bytes of object `obj` (at most `max` once decompressed).
    pub fn open(&self, obj: &[u8], max: usize) -> Result<Vec<u8>, RemoteFault> {
        let packed = match (obj.get(..4), &self.cipher) {
            (Some(m), None) if m == PLAIN => obj[4..].to_vec(),
            (Some(m), Some(c)) if m == SEALED && obj.len() >= 28 => {
                let nonce = XNonce::from_slice(&obj[4..28]);
                c.decrypt(nonce, &obj[28..])
                    .map_err(|_| RemoteFault::WrongKey)?
            }
            (Some(m), None) if m == SEALED => return Err(RemoteFault::NeedsKey),
            (Some(m), Some(_)) if m == PLAIN => return Err(RemoteFault::Plaintext),
            _ => return Err(RemoteFault::Damaged("not a chainlog object")),
        };
        zstd::bulk::decompress(&packed, max).map_err(|_| RemoteFault::Damaged("bad zstd data"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_objects_open_only_with_their_key() {
        let text = b"{\"message\":\"a secret\"}\n".repeat(50);
        let plain = Seal::new(None);
        let keyed = Seal::new(Some(b"k1"));
        let other = Seal::new(Some(b"k2"));
        assert_eq!(plain.open(&plain.seal(&text), 1 << 20).unwrap(), text);
        let obj = keyed.seal(&text);
        assert_eq!(keyed.open(&obj, 1 << 20).unwrap(), text);
        assert!(!obj.windows(6).any(|w| w == b"secret"));
        assert!(matches!(
            other.open(&obj, 1 << 20),
            Err(RemoteFault::WrongKey)
        ));
        assert!(matches!(
            plain.open(&obj, 1 << 20),
            Err(RemoteFault::NeedsKey)
        ));
        assert!(matches!(
            keyed.open(&plain.seal(&text), 1 << 20),
            Err(RemoteFault::Plaintext)
        ));
        // Names: keyed hashes differ from plain ones and between keys.
        assert_ne!(plain.hash(&[b"x"]), keyed.hash(&[b"x"]));
        assert_ne!(keyed.hash(&[b"x"]), other.hash(&[b"x"]));
        assert_ne!(plain.hash(&[b"ab", b"c"]), plain.hash(&[b"a", b"bc"]));
    }
}
