//! Arbitrary bytes as a transcript: the line reader and the chain builder never panic, and
//! reading the bytes in small pieces gives the answer of reading them at once
//! (`checks::transcript`).

#![no_main]

#[allow(dead_code, reason = "each target calls one of the checks")]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::transcript(data));
